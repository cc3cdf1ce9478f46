// Weights suite: safetensors round trip, corrupt files, name/shape checks, eval of a saved model.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <cmath>
#include <fstream>

#include "data/evaluate.h"
#include "data/token_source.h"
#include "model/safetensors.h"
#include "model/transformer.h"
#include "trainbench/config_io.h"
#include "trainbench/presets.h"
#include "trainbench/weights_io.h"

using namespace trainbench;

namespace {

std::string errorOf(const std::function<void()>& action) {
    try {
        action();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

class TestWeightsIo : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void roundTripKeepsNamesShapesAndBits() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("t.safetensors").toStdString();
        NamedTensors tensors = {{"a", torch::randn({3, 5})},
                                {"b.weight", torch::arange(7, torch::kInt64)},
                                {"c", torch::randn({2, 2}, torch::kFloat64)},
                                {"scalar", torch::tensor(2.5f)}};
        writeSafetensors(path, tensors);
        NamedTensors back = readSafetensors(path);
        QCOMPARE(back.size(), tensors.size());
        for (size_t i = 0; i < tensors.size(); ++i) {
            QCOMPARE(back[i].first, tensors[i].first);
            QVERIFY(torch::equal(back[i].second, tensors[i].second));
        }
        // Independent check of the layout: 8-byte little-endian length, then a JSON header.
        std::ifstream in(path, std::ios::binary);
        unsigned char bytes[8];
        in.read(reinterpret_cast<char*>(bytes), 8);
        uint64_t length = 0;
        for (int i = 7; i >= 0; --i) length = (length << 8) | bytes[i];
        std::string header(length, '\0');
        in.read(header.data(), length);
        QVERIFY(header.find("\"a\":{\"dtype\":\"F32\",\"shape\":[3,5],\"data_offsets\":[0,60]}") != std::string::npos);
        QCOMPARE(length % 8, uint64_t(0));
    }

    void corruptFilesAreRejectedWithTheFileName() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("w.safetensors").toStdString();
        writeSafetensors(path, {{"x", torch::ones({64})}});
        std::ifstream in(path, std::ios::binary);
        std::string whole((std::istreambuf_iterator<char>(in)), {});
        const std::string truncated = dir.filePath("truncated.safetensors").toStdString();
        std::ofstream(truncated, std::ios::binary) << whole.substr(0, whole.size() - 10);
        QVERIFY(errorOf([&] { readSafetensors(truncated); }).find(truncated) == 0);
        const std::string garbage = dir.filePath("garbage.safetensors").toStdString();
        std::ofstream(garbage, std::ios::binary) << "not a safetensors file at all";
        QVERIFY(errorOf([&] { readSafetensors(garbage); }).find("not a valid safetensors file") != std::string::npos);
        QVERIFY(!errorOf([&] { readSafetensors(dir.filePath("missing").toStdString()); }).empty());
    }

    void mismatchNamesTheFirstTensor() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("w.safetensors").toStdString();
        RunConfig config = builtinTinyConfig();
        writeInitialWeights(config, 1, path);
        RunConfig other = config;
        other.model.dim = 32;
        Transformer model(other.model);
        std::string message = errorOf([&] { loadIntoStateDict(stateDict(model), readSafetensors(path), path); });
        QVERIFY2(message.find("'embed.weight' has shape [64, 64] but the model config needs [64, 32]") != std::string::npos,
                 message.c_str());
    }

    void evalOfASavedModelEqualsItsInMemoryLoss() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("w.safetensors").toStdString();
        RunConfig config = builtinTinyConfig();
        config.train.eval_windows = 8;
        writeInitialWeights(config, 11, path);
        EvalResult from_file = evaluateWeightsFile(config, path);

        Transformer model(config.model);
        initializeWeights(model, 11);
        auto source = openTokenSource(config);
        EvalResult in_memory = evaluateModel(model, *source, config, torch::kCPU);
        QCOMPARE(from_file.tokens, int64_t(8 * config.train.seq_len));
        QCOMPARE(from_file.tokens, in_memory.tokens);
        QCOMPARE(from_file.loss, in_memory.loss);
        // A fresh model knows nothing: its loss is near uniform guessing, ln(vocab).
        QVERIFY(std::fabs(from_file.loss - std::log(double(config.model.vocab_size))) < 0.3);
    }
};

QTEST_APPLESS_MAIN(TestWeightsIo)
#include "test_weights_io.moc"
