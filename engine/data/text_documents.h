// Text files (data.source text) as documents, streamed block by block.
#pragma once

#include <filesystem>
#include <string>

#include "data/document_builder.h"

namespace trainbench {

// Reads `file` front to back into `out`: documents are the pieces between `separator`s (the
// whole file when it is empty), empty pieces dropped. Memory: one block and one separator's
// length, whatever the file's size (a document is handed on in pieces). Returns false when the
// file cannot be opened or read (a folder's unreadable file is skipped by the caller).
bool readTextDocuments(const std::filesystem::path& file, const std::string& separator, DocumentBuilder& out);

}  // namespace trainbench
