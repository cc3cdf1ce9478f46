// The source a chosen data path is read as, and which data fields a source reads.
#include "configure/data_source_choice.h"

#include <cstdint>
#include <filesystem>
#include <system_error>

#include <QFileInfo>
#include <QStringList>

namespace trainbench::gui {

namespace {

namespace fs = std::filesystem;

enum class FileKind { JsonLines, Parquet, Tokens, Other };

// The engine picks a folder's JSON Lines and Parquet files by these endings, in any case a
// dialog shows them in, so the comparison ignores case.
FileKind kindOfName(const QString& name) {
    for (const char* suffix : {".jsonl", ".jsonl.gz", ".jsonl.zst", ".ndjson"})
        if (name.endsWith(QLatin1String(suffix), Qt::CaseInsensitive)) return FileKind::JsonLines;
    if (name.endsWith(QLatin1String(".parquet"), Qt::CaseInsensitive)) return FileKind::Parquet;
    if (name.endsWith(QLatin1String(".bin"), Qt::CaseInsensitive)) return FileKind::Tokens;
    return FileKind::Other;
}

bool isHidden(const fs::path& path) {
    return path.filename().string().rfind('.', 0) == 0;
}

std::string folderSource(const QString& folder, const std::string& current) {
    int64_t json_lines = 0, parquet = 0;
    int looked = 0;
    std::error_code error;
    fs::recursive_directory_iterator it(folder.toStdString(), fs::directory_options::skip_permission_denied, error),
        end;
    for (; !error && it != end && looked < kFolderLookLimit; it.increment(error), ++looked) {
        if (isHidden(it->path())) {
            if (it->is_directory(error)) it.disable_recursion_pending();
            continue;
        }
        std::error_code kind_error;
        if (!it->is_regular_file(kind_error)) continue;
        const FileKind kind = kindOfName(QString::fromStdString(it->path().filename().string()));
        if (kind == FileKind::JsonLines) ++json_lines;
        else if (kind == FileKind::Parquet) ++parquet;
    }
    if (json_lines == 0 && parquet == 0) return choiceName(DataSource::Text);
    if (json_lines == parquet && (isChoice(current, DataSource::Jsonl) || isChoice(current, DataSource::Parquet)))
        return current;
    return json_lines >= parquet ? choiceName(DataSource::Jsonl) : choiceName(DataSource::Parquet);
}

}  // namespace

std::string dataSourceForPath(const QString& path, const std::string& current) {
    const QFileInfo info(path);
    // A Hugging Face dataset's save_to_disk() folder says what it is in its state.json.
    if (info.isDir() && QFileInfo(path + QStringLiteral("/state.json")).isFile()) return choiceName(DataSource::HfDataset);
    if (info.isDir()) return folderSource(path, current);
    switch (kindOfName(info.fileName())) {
    case FileKind::JsonLines: return choiceName(DataSource::Jsonl);
    case FileKind::Parquet: return choiceName(DataSource::Parquet);
    case FileKind::Tokens: return choiceName(DataSource::Tokens);
    case FileKind::Other: break;
    }
    return choiceName(DataSource::Text);
}

bool dataFieldRead(const QString& key, const DataConfig& data) {
    const bool markov = isChoice(data.source, DataSource::Markov);
    if (key == QLatin1String("val_path") || key == QLatin1String("val_fraction")) return !markov;
    if (key == QLatin1String("vocab_size") || key == QLatin1String("order") || key == QLatin1String("concentration") ||
        key == QLatin1String("seed"))
        return markov;
    if (key == QLatin1String("layout") || key == QLatin1String("tokenizer")) return readsDocuments(data);
    if (key == QLatin1String("doc_separator")) return isChoice(data.source, DataSource::Text);
    if (key == QLatin1String("dtype")) return isChoice(data.source, DataSource::Tokens);
    if (key == QLatin1String("text_field") || key == QLatin1String("prompt_field") ||
        key == QLatin1String("completion_field"))
        return isChoice(data.source, DataSource::Jsonl) || isChoice(data.source, DataSource::Parquet) ||
               isChoice(data.source, DataSource::HfDataset);
    if (key == QLatin1String("sources")) return readsDocuments(data);
    return true;
}

}  // namespace trainbench::gui
