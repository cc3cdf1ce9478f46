// The token cache: chunks and block boundaries change nothing (ids and marks against documents
// made by hand and a tokenizer called document by document), the narrowest id width, a hit
// reuses and an edited, damaged or half-written cache is built again, and rank threads build
// one cache once.
#include <QtTest/QtTest>

#include <QJsonDocument>
#include <QTemporaryDir>

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "data/document_source.h"
#include "data/text_documents.h"
#include "data/token_cache.h"
#include "data/token_cache_writer.h"
#include "handwritten_tokenizer.h"

using namespace trainbench;

namespace {

void writeFile(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

// A document as the cache must hold it: its ids, and per id whether it counts.
struct Expected {
    std::vector<int64_t> ids;
    std::vector<uint8_t> counted;
    std::vector<int64_t> starts{0};
    void add(const std::vector<int32_t>& ids_in, uint8_t counts) {
        for (int32_t id : ids_in) {
            ids.push_back(id);
            counted.push_back(counts);
        }
    }
    void close(int32_t end) {
        ids.push_back(end);
        counted.push_back(1);
        starts.push_back(static_cast<int64_t>(ids.size()));
    }
};

std::vector<int32_t> bytesOf(const std::string& text) { return {text.begin(), text.end()}; }

void compare(const TokenCache& cache, const Expected& expected) {
    QCOMPARE(cache.ids(), static_cast<int64_t>(expected.ids.size()));
    QCOMPARE(cache.documents(), static_cast<int64_t>(expected.starts.size()) - 1);
    for (int64_t i = 0; i < cache.ids(); ++i) {
        QCOMPARE(cache.id(i), expected.ids[i]);
        QCOMPARE(cache.counts(i) ? 1 : 0, int(expected.counted[i]));
    }
    for (size_t d = 0; d < expected.starts.size(); ++d) QCOMPARE(cache.start(d), expected.starts[d]);
}

std::vector<std::filesystem::path> cacheFiles(const std::string& folder) {
    std::vector<std::filesystem::path> out;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error))
        if (entry.path().extension() == ".tokens") out.push_back(entry.path());
    return out;
}

}  // namespace

class TestTokenCache : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    std::unique_ptr<Tokenizer> tokenizer_;

    std::string path(const std::string& name) const { return dir_.filePath(QString::fromStdString(name)).toStdString(); }

    // Documents through a builder cutting chunks of `chunk_bytes` into a writer, read back.
    std::unique_ptr<TokenCache> build(const std::string& name, const Tokenizer* tokenizer, int64_t chunk_bytes,
                                      const std::function<void(DocumentBuilder&)>& documents) {
        TokenCacheWriter writer(path(name), tokenizer ? 2 : 1, tokenizer, tokenizer ? 258 : 0, "fingerprint");
        DocumentBuilder builder(0, chunk_bytes, tokenizer == nullptr, [&](ByteChunk&& c) { writer.add(std::move(c)); });
        documents(builder);
        builder.finish();
        writer.commit(builder.bytes());
        return TokenCache::open(path(name), "fingerprint");
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        qputenv("TRAINBENCH_TOKEN_CACHE", dir_.filePath("cache").toUtf8());
        writeFile(path("tokenizer.json"), QJsonDocument(handwrittenTokenizer()).toJson().toStdString());
        tokenizer_ = openTokenizer(path("tokenizer.json"));
    }

    void theNarrowestWidthHoldsTheVocabulary() {
        QCOMPARE(tokenIdWidth(256), 1u);
        QCOMPARE(tokenIdWidth(257), 2u);
        QCOMPARE(tokenIdWidth(65536), 2u);
        QCOMPARE(tokenIdWidth(65537), 4u);
        QCOMPARE(tokenIdWidth(129280), 4u);  // DeepSeek-V3's vocabulary
    }

    // Chunks of 1, 3 and 64 bytes: the byte form cuts documents anywhere (a 10-byte document
    // across four chunks), pairs keep their prompt's bytes uncounted; the cache is the same.
    void chunksDoNotChangeTheBytes() {
        Expected expected;
        for (const std::string& text : {std::string("abcdefghij"), std::string("x"), std::string("hello world")}) {
            expected.add(bytesOf(text), 1);
            expected.close(0);
        }
        expected.add(bytesOf("Q: 2+2?"), 0);
        expected.add(bytesOf(" 4"), 1);
        expected.close(0);
        expected.add(bytesOf("tail"), 1);
        expected.close(0);
        for (int64_t chunk : {1, 3, 64}) {
            auto cache = build("bytes-" + std::to_string(chunk), nullptr, chunk, [](DocumentBuilder& b) {
                b.addText("abcdefghij");
                b.addText("");  // dropped
                b.appendText("x");
                b.endDocument();
                b.appendText("hello");
                b.appendText(" world");
                b.endDocument();
                b.endDocument();  // nothing open: dropped
                b.addPair("Q: 2+2?", " 4");
                b.appendText("tail");  // closed by finish()
            });
            QVERIFY(cache);
            QCOMPARE(cache->header().width, 1u);
            QVERIFY(cache->marked());
            compare(*cache, expected);
            QCOMPARE(cache->header().bytes_read, int64_t(10 + 1 + 11 + 9 + 4));
            QCOMPARE(cache->countedIn(0, cache->ids()), cache->ids() - 7);
        }
    }

    // With a tokenizer each document is whole in a chunk, tokenised on every core in runs that
    // come back in order: the ids equal the tokenizer called document by document, 2-byte ids.
    void chunksDoNotChangeTheTokens() {
        const std::vector<std::string> texts{"ab ab", "abc", "b a", "ab", "cab ab ab", "a"};
        Expected expected;
        for (const std::string& text : texts) {
            expected.add(tokenizer_->encode(text), 1);
            expected.close(258);
        }
        expected.add(tokenizer_->encode("ab"), 0);  // a pair's prompt and completion tokenised apart
        expected.add(tokenizer_->encode("ab"), 1);
        expected.close(258);
        for (int64_t chunk : {1, 8, 1 << 20}) {
            auto cache = build("bpe-" + std::to_string(chunk), tokenizer_.get(), chunk, [&](DocumentBuilder& b) {
                for (const std::string& text : texts) b.addText(text);
                b.addPair("ab", "ab");
            });
            QVERIFY(cache);
            QCOMPARE(cache->header().width, 2u);
            compare(*cache, expected);
        }
        // No pair: no marks are stored, and every id counts.
        auto plain = build("bpe-plain", tokenizer_.get(), 4, [](DocumentBuilder& b) { b.addText("ab ab"); });
        QVERIFY(!plain->marked());
        QCOMPARE(plain->countedIn(0, plain->ids()), plain->ids());
    }

    // A separator straddling the reader's 1 MiB block boundary is still found, and a document
    // longer than a block is read whole.
    void separatorsAcrossBlocksAreFound() {
        const size_t block = 1 << 20;
        std::string text(block - 1, 'a');
        text += "\n\n";
        text += std::string(block + 5, 'b');
        text += "\n\n\n\nc\n\n";
        writeFile(path("blocks.txt"), text);
        std::vector<int64_t> lengths;
        std::string first_bytes;
        DocumentBuilder builder(0, int64_t(1) << 40, false, [&](ByteChunk&& chunk) {
            for (int64_t d = 0; d < chunk.documents(); ++d) {
                lengths.push_back(chunk.starts[d + 1] - chunk.starts[d] - 1);
                first_bytes += chunk.bytes[chunk.starts[d]];
            }
        });
        QVERIFY(readTextDocuments(path("blocks.txt"), "\n\n", builder));
        builder.finish();
        QCOMPARE(lengths, (std::vector<int64_t>{int64_t(block - 1), int64_t(block + 5), 1}));
        QCOMPARE(first_bytes, std::string("abc"));
        QVERIFY(!readTextDocuments(path("missing.txt"), "\n\n", builder));
    }

    // The source on its cache: a hit reuses it; an edit of the same size (the status-change time
    // moves even with the modification time put back) builds it again in the same place; a
    // truncated or foreign file and a killed build's partial file are built over / removed.
    void staleOrDamagedCachesAreBuiltAgain() {
        writeFile(path("edit.txt"), "one\n\ntwo");
        DataConfig data;
        data.source = "text";
        data.path = path("edit.txt");
        data.val_fraction = 0;
        auto idsOf = [](const DocumentSource& s) {
            std::vector<int64_t> out(s.tokenCount(Split::Train));
            s.readSample(Split::Train, 0, s.tokenCount(Split::Train), out.data());
            return out;
        };
        std::string cache_path;
        {
            DocumentSource first(data);
            QVERIFY(first.caches().at(0).built);
            cache_path = first.caches().at(0).path;
            QCOMPARE(idsOf(first), (std::vector<int64_t>{'o', 'n', 'e', 0, 't', 'w', 'o', 0}));
        }
        { QVERIFY(!DocumentSource(data).caches().at(0).built); }
        struct stat before {};
        QCOMPARE(::stat(data.path.c_str(), &before), 0);
        writeFile(path("edit.txt"), "ONE\n\ntwo");
        const timespec times[2] = {before.st_atim, before.st_mtim};
        QCOMPARE(::utimensat(AT_FDCWD, data.path.c_str(), times, 0), 0);  // the old modification time
        {
            DocumentSource edited(data);
            QVERIFY(edited.caches().at(0).built);
            QCOMPARE(edited.caches().at(0).path, cache_path);  // replaced, not added beside
            QCOMPARE(idsOf(edited).front(), int64_t('O'));
        }
        QCOMPARE(cacheFiles(path("cache")).size(), size_t(1));
        // Truncated by a byte, then a foreign file of the right size: both built again.
        const auto size = std::filesystem::file_size(cache_path);
        std::filesystem::resize_file(cache_path, size - 1);
        QVERIFY(DocumentSource(data).caches().at(0).built);
        {
            std::fstream file(cache_path, std::ios::in | std::ios::out | std::ios::binary);
            file.write("TBTOKENS2", 9);
        }
        QVERIFY(DocumentSource(data).caches().at(0).built);
        // A killed build leaves "<cache>.partial.<pid>": the next build removes it.
        writeFile(cache_path + ".partial.999999", "half");
        std::filesystem::remove(cache_path);
        QVERIFY(DocumentSource(data).caches().at(0).built);
        QVERIFY(!std::filesystem::exists(cache_path + ".partial.999999"));
        QCOMPARE(idsOf(DocumentSource(data)).size(), size_t(8));
    }

    // A run's source keeps reading its cache when another process builds it again (the file is
    // replaced by rename: the mapping keeps the old one), and reports a cache cut short in place
    // (a read past its new end would kill the process).
    void aReplacedCacheStaysReadableATruncatedOneIsReported() {
        writeFile(path("live.txt"), "first\n\nsecond");
        DataConfig data;
        data.source = "text";
        data.path = path("live.txt");
        data.val_fraction = 0;
        const DocumentSource running(data);
        std::vector<int64_t> before(running.tokenCount(Split::Train));
        running.readSample(Split::Train, 0, int64_t(before.size()), before.data());
        writeFile(path("live.txt"), "FIRST\n\nsecond");
        {
            const DocumentSource rebuilt(data);
            QVERIFY(rebuilt.caches().at(0).built);
        }
        QCOMPARE(QString::fromStdString(running.fileProblem()), QString());
        std::vector<int64_t> after(before.size());
        running.readSample(Split::Train, 0, int64_t(after.size()), after.data());
        QCOMPARE(after, before);
        QCOMPARE(after.front(), int64_t('f'));
        const DocumentSource current(data);
        std::filesystem::resize_file(current.caches().at(0).path, 100);
        QVERIFY2(current.fileProblem().find("changed size") != std::string::npos, current.fileProblem().c_str());
    }

    // Rank threads opening one corpus at once: one builds it, the others wait and reuse it.
    void threadsBuildOneCacheOnce() {
        std::string text;
        for (int i = 0; i < 20000; ++i) text += "document " + std::to_string(i) + "\n\n";
        writeFile(path("shared.txt"), text);
        DataConfig data;
        data.source = "text";
        data.path = path("shared.txt");
        data.tokenizer = path("tokenizer.json");
        std::vector<std::unique_ptr<DocumentSource>> sources(4);
        std::vector<std::thread> threads;
        for (auto& source : sources) threads.emplace_back([&] { source = std::make_unique<DocumentSource>(data); });
        for (auto& t : threads) t.join();
        int built = 0;
        for (const auto& source : sources) {
            built += source->caches().at(0).built ? 1 : 0;
            QCOMPARE(source->tokenCount(Split::Train), sources[0]->tokenCount(Split::Train));
            QCOMPARE(source->documentCount(Split::Train), sources[0]->documentCount(Split::Train));
        }
        QCOMPARE(built, 1);
        // The packed cut splits at most one document between the parts.
        const int64_t documents = sources[0]->documentCount(Split::Train) + sources[0]->documentCount(Split::Validation);
        QVERIFY(documents == 20000 || documents == 20001);
    }
};

QTEST_GUILESS_MAIN(TestTokenCache)
#include "test_token_cache.moc"
