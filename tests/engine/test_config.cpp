// Config suite: JSON round trip, published configs, overrides, and validation messages.
#include <QtTest/QtTest>

#include <algorithm>
#include <fstream>
#include <functional>

#include "trainbench/config_io.h"
#include "trainbench/head_chunk.h"
#include "trainbench/memory_plan.h"
#include "trainbench/param_count.h"
#include "trainbench/presets.h"

using namespace trainbench;

namespace {

// The first validation message, or "" (for QVERIFY2, which builds its message either way).
std::string firstIssue(const RunConfig& config) {
    const auto issues = validateRunConfig(config);
    return issues.empty() ? std::string() : issues.front().message;
}

}  // namespace

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

    // runtime.head_chunk_tokens: "auto" or null the rule (nullopt, written back as null), an
    // integer from 0; another word or a negative count is refused naming the field; the rule's
    // chunk by hand.
    void headChunkTokensTakesAutoOrACount() {
        RunConfig config;
        QVERIFY(!config.runtime.head_chunk_tokens.has_value());  // the default: auto
        applyConfigOverride(config, "runtime.head_chunk_tokens=512");
        QCOMPARE(*config.runtime.head_chunk_tokens, int64_t(512));
        applyConfigOverride(config, "runtime.head_chunk_tokens=auto");
        QVERIFY(!config.runtime.head_chunk_tokens.has_value());
        QCOMPARE(parseRunConfig(R"({"runtime": {"head_chunk_tokens": 0}})").runtime.head_chunk_tokens, std::optional<int64_t>(0));
        QVERIFY(!parseRunConfig(R"({"runtime": {"head_chunk_tokens": "auto"}})").runtime.head_chunk_tokens);
        QVERIFY(!parseRunConfig(R"({"runtime": {"head_chunk_tokens": null}})").runtime.head_chunk_tokens);
        try {
            applyConfigOverride(config, "runtime.head_chunk_tokens=some");
            QFAIL("a word other than auto was taken");
        } catch (const ConfigError& e) {
            QCOMPARE(e.path(), std::string("runtime.head_chunk_tokens"));
            QVERIFY2(std::string(e.what()).find("an integer or \"auto\"") != std::string::npos, e.what());
        }
        config.runtime.head_chunk_tokens = -1;
        const auto issues = validateRunConfig(config);
        QVERIFY(std::any_of(issues.begin(), issues.end(), [](const auto& i) { return i.path == "runtime.head_chunk_tokens"; }));
        // The rule: ceil(tokens / ceil(V / d)) up to a power of two, at least 1,024, at most the
        // micro-batch; config_16B (V 102,400, d 2,048: 50) at 8 x 4,096 tokens: 656 -> 1,024; at
        // 64 x 4,096: 5,243 -> 8,192; small (V 4,096, d 512) at 512 tokens: the 512.
        ModelConfig m16;
        m16.vocab_size = 102400;
        m16.dim = 2048;
        QCOMPARE(headChunkRows(m16, std::nullopt, 8 * 4096), int64_t(1024));
        QCOMPARE(headChunkRows(m16, std::nullopt, 64 * 4096), int64_t(8192));
        QCOMPARE(headChunkRows(m16, int64_t(0), 8 * 4096), int64_t(0));
        QCOMPARE(headChunkRows(m16, int64_t(5000), 4096), int64_t(4096));
        ModelConfig small;
        small.vocab_size = 4096;
        small.dim = 512;
        QCOMPARE(headChunkRows(small, std::nullopt, 512), int64_t(512));
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
        QTest::newRow("optimizer dtype") << "runtime.optimizer_dtype=fp8" << "runtime.optimizer_dtype";
        QTest::newRow("gradient sum dtype") << "runtime.gradient_sum_dtype=fp16" << "runtime.gradient_sum_dtype";
    }

    // Each choice field: every name of its table (written out here) is accepted and reads back as
    // its enum, the schema lists exactly those names, and any other name is refused naming the field.
    void everyChoiceNameRoundTrips() {
        struct Field {
            const char* path;
            std::vector<std::string> names;
            std::function<int(const RunConfig&)> read;
        };
        const std::vector<Field> fields = {
            {"model.score_func", {"softmax", "sigmoid"}, [](const RunConfig& c) { return int(scoreFunction(c.model)); }},
            {"train.schedule", {"constant", "cosine", "linear"}, [](const RunConfig& c) { return int(lrSchedule(c.train)); }},
            {"train.incomplete_window", {"scale", "drop"}, [](const RunConfig& c) { return int(incompleteWindow(c.train)); }},
            {"train.batch_policy", {"fixed", "ramp", "adaptive"}, [](const RunConfig& c) { return int(batchPolicy(c.train)); }},
            {"train.lr_batch_rule", {"sqrt", "linear", "none"}, [](const RunConfig& c) { return int(lrBatchRule(c.train)); }},
            {"data.layout", {"packed", "padded"}, [](const RunConfig& c) { return int(rowLayout(c.data)); }},
            {"data.dtype", {"uint16", "uint32"}, [](const RunConfig& c) { return int(tokenWidth(c.data)); }},
            {"runtime.dtype", {"fp32", "bf16", "fp8", "auto"}, [](const RunConfig& c) { return int(computeDtype(c.runtime)); }},
            {"runtime.optimizer_dtype", {"fp32", "bf16"}, [](const RunConfig& c) { return int(optimizerDtype(c.runtime)); }},
            {"runtime.gradient_sum_dtype", {"fp32", "bf16"}, [](const RunConfig& c) { return int(gradientSumDtype(c.runtime)); }},
            {"runtime.activation_checkpointing", {"none", "feedforward", "full"},
             [](const RunConfig& c) { return int(recomputation(c.runtime)); }},
        };
        for (const Field& field : fields) {
            const std::string path = field.path;
            const auto dot = path.find('.');
            const ConfigFieldInfo* info = nullptr;
            for (const auto& f : configSchema())
                if (f.section == path.substr(0, dot) && f.key == path.substr(dot + 1)) info = &f;
            QVERIFY2(info, field.path);
            QCOMPARE(info->type, std::string("choice"));
            QCOMPARE(info->choices, field.names);
            for (size_t i = 0; i < field.names.size(); ++i) {
                RunConfig config;
                applyConfigOverride(config, path + "=" + field.names[i]);
                QCOMPARE(field.read(config), int(i));
            }
            RunConfig config;
            config.data.vocab_size = 256;
            applyConfigOverride(config, path + "=unheard_of");
            const auto issues = validateRunConfig(config);
            QVERIFY2(!issues.empty() && issues.front().path == path, field.path);
            QVERIFY_THROWS_EXCEPTION(std::invalid_argument, field.read(config));
        }
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
    // runtime.window_schedule unit runs blocks again in the backward from their kept inputs
    // (activation_checkpointing full), and has no point where a micro-batch's whole gradients
    // exist for the sync-each mode's all-reduce; an unknown name is refused with the choices.
    void unitWindowScheduleNeedsFullRecomputation() {
        RunConfig config;
        config.data.vocab_size = 256;
        config.runtime.window_schedule = "unit";
        auto issues = validateRunConfig(config);
        QCOMPARE(issues.size(), size_t(1));
        QCOMPARE(issues.front().path, std::string("runtime.window_schedule"));
        QVERIFY(issues.front().message.find("activation_checkpointing") != std::string::npos);
        config.runtime.activation_checkpointing = "full";
        QVERIFY(validateRunConfig(config).empty());
        config.train.sync_each_micro_batch = true;
        issues = validateRunConfig(config);
        QCOMPARE(issues.size(), size_t(1));
        QCOMPARE(issues.front().path, std::string("train.sync_each_micro_batch"));
        config.train.sync_each_micro_batch = false;
        config.runtime.window_schedule = "auto";  // any recomputation: it resolves to micro_batch without full
        config.runtime.activation_checkpointing = "none";
        QVERIFY(validateRunConfig(config).empty());
        config.runtime.window_schedule = "units";
        issues = validateRunConfig(config);
        QCOMPARE(issues.size(), size_t(1));
        QCOMPARE(issues.front().path, std::string("runtime.window_schedule"));
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

    // Every count has a range, checked before any arithmetic with it: the fuzzer's first input
    // (4 x 2^63 - 1 in m x W) and its neighbours are refused naming the field and the range.
    void everyCountHasARange_data() {
        QTest::addColumn<QString>("assignment");
        QTest::addColumn<QString>("path");
        const QString top = "9223372036854775807";
        QTest::newRow("ranks 2^63 - 1") << "runtime.world_size=" + top << "runtime.world_size";
        QTest::newRow("ranks 2^62") << "runtime.world_size=4611686018427387904" << "runtime.world_size";
        QTest::newRow("ranks 2^20 + 1") << "runtime.world_size=1048577" << "runtime.world_size";
        QTest::newRow("expert ranks") << "runtime.expert_parallel=" + top << "runtime.expert_parallel";
        QTest::newRow("micro-batch 2^31") << "train.micro_batch_size=2147483648" << "train.micro_batch_size";
        QTest::newRow("accumulation 2^53") << "train.gradient_accumulation_steps=9007199254740992"
                                           << "train.gradient_accumulation_steps";
        QTest::newRow("global batch -1") << "train.global_batch_size=-1" << "train.global_batch_size";
        QTest::newRow("steps 2^63 - 1") << "train.steps=" + top << "train.steps";
        QTest::newRow("tokens 2^63 - 1") << "train.tokens=" + top << "train.tokens";
        QTest::newRow("samples -1") << "train.samples=-1" << "train.samples";
        QTest::newRow("ramp tokens 2^63 - 1") << "train.batch_ramp_tokens=" + top << "train.batch_ramp_tokens";
        QTest::newRow("dwell tokens 2^63 - 1") << "train.batch_adapt_dwell_tokens=" + top << "train.batch_adapt_dwell_tokens";
        QTest::newRow("adapt factor 2^31") << "train.batch_adapt_factor=2147483648" << "train.batch_adapt_factor";
        QTest::newRow("max accumulation -1") << "train.batch_adapt_max_accumulation=-1" << "train.batch_adapt_max_accumulation";
        QTest::newRow("vocab 2^31") << "model.vocab_size=2147483648" << "model.vocab_size";
        QTest::newRow("dim 2^63 - 1") << "model.dim=" + top << "model.dim";
        QTest::newRow("experts 2^31") << "model.n_routed_experts=2147483648" << "model.n_routed_experts";
        QTest::newRow("layers -1") << "model.n_layers=-1" << "model.n_layers";
        QTest::newRow("memory limit 2^63 - 1") << "runtime.memory_limit_mb=" + top << "runtime.memory_limit_mb";
        QTest::newRow("data vocab 2^53") << "data.vocab_size=9007199254740992" << "data.vocab_size";
    }
    void everyCountHasARange() {
        QFETCH(QString, assignment);
        QFETCH(QString, path);
        RunConfig config;
        config.data.vocab_size = 256;
        applyConfigOverride(config, assignment.toStdString());
        const auto issues = validateRunConfig(config);
        QVERIFY2(!issues.empty(), qPrintable(assignment));
        QCOMPARE(issues.front().path, path.toStdString());
        QVERIFY2(issues.front().message.find("must be between") != std::string::npos, issues.front().message.c_str());
    }

    // At the top of each range the config is still valid (a cluster of 2^20 ranks); a float
    // where a count belongs is refused by the parser, naming the field.
    void theRangesEndsAreAccepted() {
        RunConfig config;
        config.data.vocab_size = 256;
        config.runtime.world_size = int64_t(1) << 20;
        QVERIFY2(validateRunConfig(config).empty(), firstIssue(config).c_str());
        try {
            applyConfigOverride(config, "train.steps=1e30");
            QFAIL("1e30 was taken as a step count");
        } catch (const ConfigError& e) {
            QCOMPARE(e.path(), std::string("train.steps"));
        }
    }

    // Products of counts each in range are computed wide and bounded: the error names the
    // fields of the product, never a wrapped number.
    void productsThatWouldWrapAreRefused_data() {
        QTest::addColumn<QStringList>("assignments");
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("says");
        QTest::newRow("m x K x W x seq_len") << QStringList{"train.micro_batch_size=1048576",
                                                            "train.gradient_accumulation_steps=1048576",
                                                            "runtime.world_size=1048576"}
                                             << "train.micro_batch_size" << "tokens per optimizer step";
        QTest::newRow("steps x tokens per step") << QStringList{"train.micro_batch_size=1048576", "train.steps=1099511627776"}
                                                 << "train.steps" << "2^53";
        QTest::newRow("samples x seq_len") << QStringList{"train.samples=9007199254740992"} << "train.samples" << "2^53";
        QTest::newRow("parameters") << QStringList{"model.dim=1048576", "model.n_layers=16384"} << "model.dim"
                                    << "parameters";
        QTest::newRow("activations") << QStringList{"model.max_seq_len=16777216", "train.seq_len=16777216",
                                                    "train.micro_batch_size=65536"}
                                     << "train.micro_batch_size" << "activations";
        QTest::newRow("markov table") << QStringList{"data.vocab_size=65536", "data.order=3"} << "data.vocab_size"
                                      << "probabilities";
    }
    void productsThatWouldWrapAreRefused() {
        QFETCH(QStringList, assignments);
        QFETCH(QString, path);
        QFETCH(QString, says);
        RunConfig config;
        config.data.vocab_size = 256;
        for (const QString& a : assignments) applyConfigOverride(config, a.toStdString());
        const auto issues = validateRunConfig(config);
        QVERIFY(!issues.empty());
        QCOMPARE(issues.front().path, path.toStdString());
        QVERIFY2(issues.front().message.find(says.toStdString()) != std::string::npos, issues.front().message.c_str());
    }

    // The planner tries every divisor of m x K: a micro-batch of 2^40 tokens over a 2^31 - 1
    // vocabulary (valid as configured at m = 1) has logits and activations beyond 64 bits, which
    // read as more than any device holds, never as a wrapped number.
    void aPlanBeyondAnyDeviceSaysSoWithoutWrapping() {
        RunConfig config;
        config.data.vocab_size = 256;
        config.model.vocab_size = (int64_t(1) << 31) - 1;
        config.model.max_seq_len = int64_t(1) << 20;
        config.train.seq_len = int64_t(1) << 20;
        config.train.micro_batch_size = 1;
        config.train.gradient_accumulation_steps = int64_t(1) << 20;
        config.train.steps = 1;
        config.runtime.head_chunk_tokens = 0;  // the whole logits: [2^40 tokens x 2^31] of them
        QVERIFY2(validateRunConfig(config).empty(), firstIssue(config).c_str());
        const MemoryPlan whole = planMemory(withLayout(config, {0, "none", int64_t(1) << 20, 1}), int64_t(80) << 30);
        QVERIFY(whole.logits_bytes >= int64_t(1) << 59);
        QVERIFY(whole.activation_bytes >= int64_t(1) << 59);
        QVERIFY(whole.peak_bytes > whole.logits_bytes);
        QVERIFY(!whole.fits);
        QCOMPARE(planMemory(config, int64_t(80) << 30).largest_fitting_micro_batch, int64_t(0));
        // In chunks the head's term is bounded by one chunk, the activations still by the clamp.
        config.runtime.head_chunk_tokens.reset();
        const MemoryPlan chunked = planMemory(withLayout(config, {0, "none", int64_t(1) << 20, 1}), int64_t(80) << 30);
        QVERIFY(chunked.logits_bytes > 0 && chunked.logits_bytes < whole.logits_bytes);
        QVERIFY(chunked.activation_bytes >= int64_t(1) << 59);
        QVERIFY(!chunked.fits);
    }

    // The largest fitting micro-batch is found among the divisors of m x K (2^40 here), not by
    // counting up to it.
    void theFittingMicroBatchIsSearchedAmongDivisors() {
        RunConfig config = builtinTinyConfig();
        config.train.global_batch_size.reset();
        config.train.micro_batch_size = int64_t(1) << 20;
        config.train.gradient_accumulation_steps = int64_t(1) << 20;
        config.train.seq_len = 1;
        QVERIFY2(validateRunConfig(config).empty(), firstIssue(config).c_str());
        const MemoryPlan plan = planMemory(config, int64_t(80) << 30);
        const int64_t m = plan.largest_fitting_micro_batch;
        QVERIFY(m >= 1);
        QCOMPARE(m & (m - 1), int64_t(0));  // a divisor of 2^40
        QVERIFY(planMemory(withLayout(config, {0, "none", m, 1}), int64_t(80) << 30).fits);
        QVERIFY(!planMemory(withLayout(config, {0, "none", 2 * m, 1}), int64_t(80) << 30).fits);
    }

    void parameterCountOfPublishedV2Lite() {
        // Hand count from docs/design/model.md: 5,291 state-dict tensors; total within 0.2% of 15.7B.
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
