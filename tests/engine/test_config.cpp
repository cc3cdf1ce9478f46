// Config suite: JSON round trip, published configs, overrides, and validation messages.
#include <QtTest/QtTest>

#include <fstream>

#include "trainbench/config_io.h"
#include "trainbench/param_count.h"

using namespace trainbench;

class TestConfig : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void roundTripKeepsEveryField() {
        RunConfig config;
        config.model.dim = 96;
        config.model.gate_bias = true;
        config.model.score_func = "sigmoid";
        config.train.lr = 1.25e-3;
        config.train.global_batch_size = 16;
        config.train.micro_batch_size = 4;
        config.train.gradient_accumulation_steps = 4;
        config.data.concentration = 0.25;
        config.runtime.device = "cuda:0";
        std::string text = runConfigToJson(config);
        RunConfig back = parseRunConfig(text, "round-trip");
        QCOMPARE(runConfigToJson(back), text);
        QCOMPARE(back.model.dim, int64_t(96));
        QVERIFY(back.model.gate_bias.has_value() && *back.model.gate_bias);
        QCOMPARE(back.train.lr, 1.25e-3);
        QCOMPARE(*back.train.global_batch_size, int64_t(16));
        QCOMPARE(back.runtime.device, std::string("cuda:0"));
    }

    void unknownKeyIsRejectedWithSuggestion() {
        try {
            parseRunConfig(R"({"train": {"micro_batch_sise": 4}})", "bad.json");
            QFAIL("an unknown key was accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(e.path(), std::string("train.micro_batch_sise"));
            QVERIFY2(std::string(e.what()).find("did you mean 'train.micro_batch_size'") != std::string::npos, e.what());
            QVERIFY(std::string(e.what()).find("bad.json") != std::string::npos);
        }
    }

    void unknownSectionIsRejected() {
        QVERIFY_THROWS_EXCEPTION(ConfigError, parseRunConfig(R"({"trian": {}})"));
    }

    void wrongTypeNamesTheField() {
        try {
            parseRunConfig(R"({"train": {"steps": "many"}})");
            QFAIL("a string was accepted for an integer");
        } catch (const ConfigError& e) {
            QCOMPARE(e.path(), std::string("train.steps"));
        }
    }

    void publishedConfigLoadsAsModelSection() {
        RunConfig config = parseRunConfig(R"({"vocab_size": 129280, "dim": 7168, "n_layers": 61,
            "score_func": "sigmoid", "dtype": "fp8"})", "config_671B.json");
        QCOMPARE(config.model.dim, int64_t(7168));
        QCOMPARE(config.model.n_heads, int64_t(16));  // reference default for a missing key
        QVERIFY(config.model.hasGateBias());          // reference rule: dim == 7168
    }

    void overrideParsesTypedValues() {
        RunConfig config;
        applyConfigOverride(config, "train.lr=0.5");
        applyConfigOverride(config, "train.schedule=linear");
        applyConfigOverride(config, "model.gate_bias=false");
        QCOMPARE(config.train.lr, 0.5);
        QCOMPARE(config.train.schedule, std::string("linear"));
        QVERIFY(config.model.gate_bias.has_value() && !*config.model.gate_bias);
        QVERIFY_THROWS_EXCEPTION(ConfigError, applyConfigOverride(config, "train.lrr=1"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, applyConfigOverride(config, "train.steps=abc"));
        QVERIFY_THROWS_EXCEPTION(ConfigError, applyConfigOverride(config, "nonsense"));
    }

    // Found by fuzzing: bytes that are not UTF-8, and numbers beyond a double, used to escape
    // as JSON library exceptions. Now each is a ConfigError naming the field.
    void overridesJsonCannotHoldAreConfigErrors() {
        RunConfig config;
        try {
            applyConfigOverride(config, "data.path=train\xff.bin");
            QFAIL("a value that is not UTF-8 was accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(e.path(), std::string("data.path"));
            QVERIFY2(std::string(e.what()).find("not valid UTF-8") != std::string::npos, e.what());
        }
        try {
            applyConfigOverride(config, "train.lr=1e999");
            QFAIL("a number beyond a double was accepted");
        } catch (const ConfigError& e) {
            QCOMPARE(e.path(), std::string("train.lr"));
        }
        QVERIFY_THROWS_EXCEPTION(ConfigError, parseRunConfig("{\"train\": {\"lr\": 1e999}}"));
        QCOMPARE(config.train.lr, RunConfig().train.lr);  // nothing half-applied
    }

    void batchIdentityErrorListsValidPairs() {
        RunConfig config;
        config.train.micro_batch_size = 5;
        config.train.gradient_accumulation_steps = 3;
        config.runtime.world_size = 2;
        config.train.global_batch_size = 32;
        auto issues = validateRunConfig(config);
        QVERIFY(!issues.empty());
        const auto& message = issues.front().message;
        QCOMPARE(issues.front().path, std::string("train.global_batch_size"));
        QVERIFY2(message.find("= 30 != train.global_batch_size (32)") != std::string::npos, message.c_str());
        QVERIFY2(message.find("{1, 2, 4, 8, 16}") != std::string::npos, message.c_str());
    }

    void validationRulesNameTheirField_data() {
        QTest::addColumn<QString>("assignment");
        QTest::addColumn<QString>("path");
        QTest::newRow("activated > routed") << "model.n_activated_experts=99" << "model.n_activated_experts";
        QTest::newRow("groups divide experts") << "model.n_expert_groups=3" << "model.n_expert_groups";
        QTest::newRow("limited <= groups") << "model.n_limited_groups=2" << "model.n_limited_groups";
        QTest::newRow("odd rope dim") << "model.qk_rope_head_dim=7" << "model.qk_rope_head_dim";
        QTest::newRow("dense <= layers") << "model.n_dense_layers=99" << "model.n_dense_layers";
        QTest::newRow("score func") << "model.score_func=relu" << "model.score_func";
        QTest::newRow("micro batch") << "train.micro_batch_size=0" << "train.micro_batch_size";
        QTest::newRow("schedule") << "train.schedule=step" << "train.schedule";
        QTest::newRow("seq_len > max") << "train.seq_len=100000" << "train.seq_len";
        QTest::newRow("device") << "runtime.device=tpu" << "runtime.device";
        QTest::newRow("data source") << "data.source=images" << "data.source";
        QTest::newRow("zero stage 4") << "runtime.zero_stage=4" << "runtime.zero_stage";
        QTest::newRow("recomputation mode") << "runtime.activation_checkpointing=some" << "runtime.activation_checkpointing";
        QTest::newRow("dtype") << "runtime.dtype=fp16" << "runtime.dtype";
    }

    // The sync-each mode (an all-reduce per micro-batch) belongs to stage 0 only.
    void syncEachIsRefusedWithAShardedState() {
        RunConfig config;
        config.data.vocab_size = 256;
        config.train.sync_each_micro_batch = true;
        QVERIFY(validateRunConfig(config).empty());
        for (int64_t stage : {1, 2}) {
            config.runtime.zero_stage = stage;
            const auto issues = validateRunConfig(config);
            QCOMPARE(issues.size(), size_t(1));
            QCOMPARE(issues.front().path, std::string("train.sync_each_micro_batch"));
        }
    }
    void validationRulesNameTheirField() {
        QFETCH(QString, assignment);
        QFETCH(QString, path);
        RunConfig config;
        config.data.vocab_size = 256;
        QVERIFY(validateRunConfig(config).empty());
        applyConfigOverride(config, assignment.toStdString());
        auto issues = validateRunConfig(config);
        QVERIFY2(!issues.empty(), qPrintable(assignment));
        bool named = false;
        for (const auto& issue : issues)
            named = named || (issue.path == path.toStdString() && issue.message.find(path.toStdString()) == 0);
        QVERIFY2(named, issues.front().message.c_str());
    }

    void parameterCountOfPublishedV2Lite() {
        // Hand count from ARCHITECTURE.md: 5,291 state-dict tensors; total within 0.2% of 15.7B.
        RunConfig config = parseRunConfig(R"({"vocab_size": 102400, "dim": 2048, "inter_dim": 10944,
            "moe_inter_dim": 1408, "n_layers": 27, "n_dense_layers": 1, "n_heads": 16, "n_routed_experts": 64,
            "n_shared_experts": 2, "n_activated_experts": 6, "route_scale": 1.0, "q_lora_rank": 0,
            "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
            "mscale": 0.707})");
        ParamCount count = countParameters(config.model);
        QCOMPARE(count.state_dict_tensors, int64_t(5291));
        QVERIFY(std::abs(double(count.total) / 15.7e9 - 1.0) < 0.002);
    }
};

QTEST_APPLESS_MAIN(TestConfig)
#include "test_config.moc"
