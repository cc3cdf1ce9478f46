// CorpusIdentity: what names a corpus's token cache and what tells a stale one from a good one.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace trainbench {

// `key` names the cache file: the SHA-256 of `reading` (how the files are read: the source kind,
// its fields and separator, the tokenizer file's SHA-256 and end token, the format version) and
// of the files' absolute paths in order. It does not change when a file is edited, so an edited
// corpus replaces its cache rather than adding one beside it.
//
// `fingerprint` is stored in the cache and must match on every open. Per file: its size,
// modification and status-change times in nanoseconds, device and inode, and the SHA-256 of
// sampled content: the whole file up to 64 KiB, else 16 blocks of 4 KiB spread evenly from the
// first byte to the last. The times catch any ordinary edit (the status-change time moves even
// when a tool restores the modification time), the inode a file replaced by another, and the
// samples an edit on a file system whose clocks are coarse or a copy that kept its times. Cost:
// one stat and at most 64 KiB read per file, whatever the corpus's size. What it cannot catch: an
// edit inside an unsampled block that keeps the size and both times (which needs privileges to
// forge the status-change time); the cache's own SHA-256 of the content is not recomputed.
struct CorpusIdentity {
    std::string key;
    std::string fingerprint;
};

CorpusIdentity corpusIdentity(const std::vector<std::filesystem::path>& files, const std::string& reading);

}  // namespace trainbench
