// Generation (engine/generate/, MLA's decode path in model/): the cache against recomputing the
// whole sequence, the absorbed cache against the naive one, a batch against each prompt alone,
// and the sampling filters against distributions computed by hand.
#include <QtTest/QtTest>

#include <QFile>
#include <QJsonDocument>
#include <QTemporaryDir>

#include <cmath>

#include "generate/generation.h"
#include "generate/sampling.h"
#include "model/rotary.h"
#include "handwritten_tokenizer.h"
#include "tiny_model.h"
#include "trainbench/config_io.h"
#include "trainbench/run_sample.h"
#include "trainbench/text_generation.h"
#include "model/safetensors.h"
#include "trainbench/training_session.h"

using namespace trainbench;

namespace {

// The tiny model with YaRN on (max_seq_len beyond original_seq_len) and one dense, one MoE block.
ModelConfig yarnModel() {
    ModelConfig c = tinyTestModel(64, 32);
    c.original_seq_len = 16;
    c.max_seq_len = 48;
    c.rope_factor = 4;
    c.max_batch_size = 2;  // three prompts run in two waves
    return c;
}

Transformer trainedLooking(const ModelConfig& c) {
    Transformer model(c);
    initializeWeights(model, 3);
    // Larger weights than the initialisation's, so the logits differ clearly between tokens.
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())
        if (p.dim() >= 2) p.mul_(6.0);
    model->eval();
    return model;
}

GenerationOptions greedy(int64_t n, CacheForm form) {
    GenerationOptions o;
    o.sampling.temperature = 0;
    o.max_new_tokens = n;
    o.form = form;
    return o;
}

double maxAbs(const torch::Tensor& t) { return t.abs().max().item<double>(); }

// A byte-text run of the tiny model that writes greedy samples at steps 2 and 3 (the last).
RunConfig sampledRun(const QString& corpus) {
    RunConfig c = tinyRun(3);
    c.model = tinyTestModel(256, 32);
    c.train.lr = 1e-2;
    c.train.eval_every = 0;
    c.train.final_checkpoint = false;
    c.data.source = "text";
    c.data.path = corpus.toStdString();
    c.train.sample_every = 2;
    c.train.sample_prompts = "the c\n\na d";  // the empty line is no prompt
    c.train.sample_tokens = 16;
    return c;
}

// The samples a run writes, in the order they came.
std::vector<RunSample> samplesOf(const RunConfig& config) {
    TrainingSession session(config);
    auto inbox = session.bus().subscribe();
    session.start();
    if (!session.wait(std::chrono::minutes(5)) || session.summary().status != RunStatus::Completed) return {};
    std::vector<RunSample> out;
    for (const auto& e : inbox->drain().events)
        if (auto sample = sampleOfEvent(e)) out.push_back(*sample);
    return out;
}

}  // namespace

class TestGeneration : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The rotation at given positions is the table's at 0 .. T-1 (and at an offset, the table's
    // rows from that offset).
    void rotationAtPositionsIsTheTables() {
        const ModelConfig c = yarnModel();
        RotaryTable table(c);
        auto x = torch::randn({2, 10, 3, 8 + c.qk_rope_head_dim}, torch::kFloat64);
        auto positions = torch::arange(10, torch::kInt64).repeat({2, 1});
        QVERIFY(maxAbs(table.applyAt(x, positions, 8) - table.apply(x, 8)) < 1e-12);
        auto later = table.applyAt(x.narrow(1, 4, 6), positions.narrow(1, 4, 6), 8);
        QVERIFY(maxAbs(later - table.apply(x, 8).narrow(1, 4, 6)) < 1e-12);
    }

    // Greedy decoding with either cache picks, at every step, the token the whole sequence's
    // forward (the training path, no cache) ranks first, and its logits agree.
    void theCacheGivesTheWholeSequencesLogits() {
        const ModelConfig c = yarnModel();
        Transformer model = trainedLooking(c);
        const std::vector<int64_t> prompt = {5, 17, 3, 40, 22};
        for (CacheForm form : {CacheForm::Naive, CacheForm::Absorbed}) {
            const auto got = generate(model, {prompt}, greedy(12, form)).front();
            QCOMPARE(got.tokens.size(), size_t(12));
            std::vector<int64_t> sequence = prompt;
            for (size_t i = 0; i < got.tokens.size(); ++i) {
                torch::NoGradGuard no_grad;
                auto logits = model->forward(torch::tensor(sequence, torch::kInt64).view({1, -1}))[0][-1];
                QCOMPARE(got.tokens[i], logits.argmax().item<int64_t>());
                const double logprob = logits.to(torch::kFloat64).log_softmax(0)[got.tokens[i]].item<double>();
                QVERIFY2(std::fabs(got.logprobs[i] - logprob) < 1e-4,
                         qPrintable(QString("step %1: %2 vs %3").arg(i).arg(got.logprobs[i]).arg(logprob)));
                sequence.push_back(got.tokens[i]);
            }
        }
    }

    // The absorbed cache's logits are the naive one's (one decode step, position by position).
    void absorbedEqualsNaive() {
        const ModelConfig c = yarnModel();
        Transformer model = trainedLooking(c);
        auto tokens = torch::tensor(std::vector<int64_t>{1, 9, 30, 2, 7, 7, 50}, torch::kInt64).view({1, -1});
        KvCache naive = model->newCache(1, CacheForm::Naive), absorbed = model->newCache(1, CacheForm::Absorbed);
        auto a = model->decode(tokens, naive, {0}, {0});
        auto b = model->decode(tokens, absorbed, {0}, {0});
        QVERIFY2(maxAbs(a - b) < 1e-4, qPrintable(QString::number(maxAbs(a - b))));
        auto more = torch::tensor(std::vector<int64_t>{11}, torch::kInt64).view({1, 1});
        QVERIFY(maxAbs(model->decode(more, naive, {0}, {7}) - model->decode(more, absorbed, {0}, {7})) < 1e-4);
    }

    // A prefill's head over the last position only gives that position's logits of the whole
    // prefill, and leaves the cache as the whole one does.
    void thePrefillsLastPositionIsTheWholeOnesLastRow() {
        const ModelConfig c = yarnModel();
        Transformer model = trainedLooking(c);
        auto tokens = torch::tensor(std::vector<int64_t>{1, 9, 30, 2, 7, 7, 50, 4, 8, 3}, torch::kInt64).view({2, -1});
        KvCache whole = model->newCache(2, CacheForm::Naive), last = model->newCache(2, CacheForm::Naive);
        const auto all = model->decode(tokens, whole, {0, 1}, {0, 0});
        const auto one = model->decode(tokens, last, {0, 1}, {0, 0}, TransformerImpl::LogitRows::Last);
        QCOMPARE(one.sizes().vec(), (std::vector<int64_t>{2, 1, c.vocab_size}));
        QVERIFY2(maxAbs(one.squeeze(1) - all.select(1, 4)) < 1e-5, qPrintable(QString::number(maxAbs(one.squeeze(1) - all.select(1, 4)))));
        auto next = torch::tensor(std::vector<int64_t>{11, 12}, torch::kInt64).view({2, 1});
        QCOMPARE(maxAbs(model->decode(next, whole, {0, 1}, {5, 5}) - model->decode(next, last, {0, 1}, {5, 5})), 0.0);
    }

    // Prompts of different lengths in one batch (and in two waves) get what each gets alone.
    void aBatchGivesEachPromptWhatItGetsAlone() {
        const ModelConfig c = yarnModel();
        Transformer model = trainedLooking(c);
        // Two of one length (prefilled together) between others, over two waves of two rows.
        const std::vector<std::vector<int64_t>> prompts = {{4, 8}, {60, 1, 2, 3, 33, 9, 12}, {19}, {7, 7}, {30, 2}};
        const auto together = generate(model, prompts, greedy(8, CacheForm::Absorbed));
        for (size_t i = 0; i < prompts.size(); ++i) {
            const auto alone = generate(model, {prompts[i]}, greedy(8, CacheForm::Absorbed)).front();
            QCOMPARE(together[i].tokens, alone.tokens);
            for (size_t k = 0; k < alone.logprobs.size(); ++k) QVERIFY(std::fabs(together[i].logprobs[k] - alone.logprobs[k]) < 1e-5);
        }
    }

    // A row stops at the end token; a prompt too long for the cache, or empty, is refused.
    void endTokenAndBadPrompts() {
        const ModelConfig c = yarnModel();
        Transformer model = trainedLooking(c);
        const auto first = generate(model, {{5, 6}}, greedy(6, CacheForm::Naive)).front();
        GenerationOptions o = greedy(6, CacheForm::Naive);
        o.end_token = first.tokens[2];
        const auto stopped = generate(model, {{5, 6}}, o).front();
        QVERIFY(stopped.ended);
        QVERIFY(stopped.tokens.size() <= 3);
        QCOMPARE(stopped.tokens.back(), o.end_token);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generate(model, {std::vector<int64_t>(45, 1)}, greedy(4, CacheForm::Naive)));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generate(model, {{}}, greedy(4, CacheForm::Naive)));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, generate(model, {{64}}, greedy(4, CacheForm::Naive)));
    }

    // The filters on logits (2, 1, 0, -1), by hand: softmax weights e^2, e^1, e^0, e^-1 (over
    // temperature T: e^(z/T)), the kept ones renormalised.
    void samplingFiltersMatchHandComputedDistributions() {
        const auto logits = torch::tensor(std::vector<double>{2, 1, 0, -1});
        auto expect = [](std::vector<double> weights) {
            double total = 0;
            for (double w : weights) total += w;
            for (double& w : weights) w /= total;
            return weights;
        };
        auto check = [&](const SamplingOptions& o, const std::vector<double>& want) {
            const auto got = samplingDistribution(logits, o);
            for (size_t i = 0; i < want.size(); ++i)
                QVERIFY2(std::fabs(got[int64_t(i)].item<double>() - want[i]) < 1e-12,
                         qPrintable(QString("token %1: %2 vs %3").arg(i).arg(got[int64_t(i)].item<double>()).arg(want[i])));
        };
        const double e = std::exp(1.0);
        check({1.0, 0, 1.0}, expect({e * e, e, 1, 1 / e}));
        check({1.0, 2, 1.0}, expect({e * e, e, 0, 0}));
        check({0.5, 0, 1.0}, expect({std::pow(e, 4), e * e, 1, 1 / (e * e)}));
        // p(0) = 0.6439, p(0) + p(1) = 0.8808: top-p 0.7 keeps two tokens, 0.6 one.
        check({1.0, 0, 0.7}, expect({e * e, e, 0, 0}));
        check({1.0, 0, 0.6}, {1, 0, 0, 0});
        check({0.0, 0, 1.0}, {1, 0, 0, 0});
    }

    // The same seed draws the same text; another seed, at a high temperature, other text.
    // train.sample_every: rank 0 writes each prompt's greedy continuation at steps 2 and 3; where
    // the weights or experts are divided (stage 3, expert parallelism) they are gathered first,
    // and the text is what plain data parallelism writes.
    void samplesAreWrittenAtTheirStepsUnderEveryLayout() {
        QTemporaryDir dir;
        const QString corpus = dir.filePath("corpus.txt");
        {
            QFile file(corpus);
            QVERIFY(file.open(QIODevice::WriteOnly));
            for (int i = 0; i < 100; ++i) file.write(i % 2 ? "the cat sat on the mat\n\n" : "a dog ran in the park\n\n");
        }
        RunConfig plain = sampledRun(corpus);
        plain.runtime.world_size = 2;
        plain.train.gradient_accumulation_steps = 1;
        const auto reference = samplesOf(plain);
        QCOMPARE(reference.size(), size_t(4));
        const std::pair<int64_t, std::string> expected[] = {{2, "the c"}, {2, "a d"}, {3, "the c"}, {3, "a d"}};
        for (size_t i = 0; i < 4; ++i) {
            QCOMPARE(reference[i].step, expected[i].first);
            QCOMPARE(reference[i].prompt, expected[i].second);
            QVERIFY(!reference[i].completion.empty());
        }
        for (const auto& [stage, ep] : {std::pair<int64_t, int64_t>{3, 1}, {0, 2}, {3, 2}}) {
            RunConfig divided = plain;
            divided.runtime.zero_stage = stage;
            divided.runtime.expert_parallel = ep;
            const auto samples = samplesOf(divided);
            const QString layout = QString("zero_stage %1, expert_parallel %2").arg(stage).arg(ep);
            QVERIFY2(samples.size() == reference.size(), qPrintable(layout));
            for (size_t i = 0; i < samples.size(); ++i)
                QVERIFY2(samples[i].step == reference[i].step && samples[i].completion == reference[i].completion,
                         qPrintable(layout + ": " + QString::fromStdString(samples[i].completion) + " vs " +
                                    QString::fromStdString(reference[i].completion)));
        }
        // No prompts: one sample from the start of a document.
        RunConfig unprompted = sampledRun(corpus);
        unprompted.train.sample_prompts = "";
        const auto from_start = samplesOf(unprompted);
        QCOMPARE(from_start.size(), size_t(2));
        QCOMPARE(from_start[0].prompt, std::string());
    }

    // Sample settings that cannot work are refused before the run starts, naming the field.
    void badSampleSettingsAreRefused() {
        QTemporaryDir dir;
        const QString corpus = dir.filePath("corpus.txt");
        {
            QFile file(corpus);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write("some text\n\nmore text\n\n");
        }
        auto refusal = [](const RunConfig& config) -> std::string {
            try {
                TrainingSession session(config);
            } catch (const ConfigError& e) {
                return e.path();
            }
            return "accepted";
        };
        RunConfig markov = sampledRun(corpus);
        markov.data.source = "markov";
        QCOMPARE(refusal(markov), std::string("train.sample_every"));
        RunConfig long_prompt = sampledRun(corpus);
        long_prompt.train.sample_prompts = std::string(60, 'x');  // 60 + 16 tokens > max_seq_len 64
        QCOMPARE(refusal(long_prompt), std::string("train.sample_prompts"));
        RunConfig no_room = sampledRun(corpus);
        no_room.train.sample_tokens = 64;
        QCOMPARE(refusal(no_room), std::string("train.sample_tokens"));
        QCOMPARE(refusal(sampledRun(corpus)), std::string("accepted"));
    }

    // generateText refuses, naming the culprit: a prompt the tokenizer cannot encode (bytes that
    // are not UTF-8, for a byte-level BPE), an empty one, weights of another model (naming the
    // file), a config without text.
    void generateTextRefusesWhatItCannotDo() {
        QTemporaryDir dir;
        const std::string weights = dir.filePath("model.safetensors").toStdString();
        const QString tokenizer = dir.filePath("tokenizer.json");
        {
            QFile file(tokenizer);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(QJsonDocument(handwrittenTokenizer()).toJson());
        }
        TextGenerationRequest request;
        request.config.model = tinyTestModel(260, 32);
        request.config.train.seq_len = 32;
        request.config.data.source = "text";  // no data.path: generation needs the tokenizer only
        request.config.data.tokenizer = tokenizer.toStdString();
        {
            Transformer model(request.config.model);
            initializeWeights(model, 1);
            writeSafetensors(weights, stateDict(model));
        }
        request.weights = weights;
        request.max_new_tokens = 4;
        request.temperature = 0;
        auto refusal = [](const TextGenerationRequest& r) -> std::string {
            try {
                generateText(r);
            } catch (const ConfigError& e) {
                return e.path() + ": " + e.what();
            }
            return "accepted";
        };
        request.prompts = {"an ab"};
        QVERIFY2(refusal(request) == "accepted", refusal(request).c_str());
        QCOMPARE(generateText(request).completions.front().prompt_ids, (std::vector<int64_t>{'a', 'n', 257}));
        request.prompts = {"ok", "bad \xff"};
        const std::string unencodable = refusal(request);
        QVERIFY2(unencodable.rfind("--prompt: prompt 2", 0) == 0 && unencodable.find("UTF-8") != std::string::npos,
                 unencodable.c_str());
        request.prompts = {""};
        QVERIFY2(refusal(request).rfind("--prompt: prompt 1 is empty", 0) == 0, refusal(request).c_str());
        request.prompts = {"ok"};
        TextGenerationRequest other = request;
        other.config.model.dim = 64;
        const std::string mismatch = refusal(other);
        QVERIFY2(mismatch.find(weights) != std::string::npos, mismatch.c_str());
        TextGenerationRequest markov = request;
        markov.config.data.source = "markov";
        QVERIFY2(refusal(markov).rfind("data.source", 0) == 0, refusal(markov).c_str());
    }

    void aSeedReproducesTheDraws() {
        const ModelConfig c = yarnModel();
        Transformer model = trainedLooking(c);
        GenerationOptions o;
        o.sampling.temperature = 3.0;
        o.max_new_tokens = 16;
        o.seed = 11;
        const auto a = generate(model, {{1, 2, 3}}, o).front(), b = generate(model, {{1, 2, 3}}, o).front();
        QCOMPARE(a.tokens, b.tokens);
        o.seed = 12;
        QVERIFY(generate(model, {{1, 2, 3}}, o).front().tokens != a.tokens);
    }
};

QTEST_GUILESS_MAIN(TestGeneration)
#include "test_generation.moc"
