// bf16 device weights (runtime.offload on a GPU under bf16): the linear layers' weights held in
// bf16 on the device beside the host step's fp32 master (at stage 3 their shards and gathered
// units; under offload all their shards off the device in bf16 too). On CPU ranks
// through the CPU's autocast (its kernels off) and the host step with plain copies: the same
// numbers as fp32 weights under autocast, the master in the checkpoints, the device's bytes
// (docs/design/offload.md).
#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <map>

#include "cpu_paths_report.h"
#include "kernels/cpu_kernels.h"
#include "offload_runs.h"
#include "train/checkpoint.h"
#include "trainbench/config_io.h"

using namespace trainbench;

namespace {

// The CPU's bf16 through autocast, as a GPU computes it, for one test.
struct AutocastOnTheCpu {
    bool were = kernels::cpuKernelsEnabled();
    AutocastOnTheCpu() { kernels::setCpuKernelsEnabled(false); }
    ~AutocastOnTheCpu() { kernels::setCpuKernelsEnabled(were); }
};

RunConfig bf16Split(int64_t m, int64_t K, int64_t W, int64_t stage, int64_t EP = 1) {
    RunConfig c = split(m, K, W, stage, EP);
    c.runtime.dtype = "bf16";
    return c;
}

// The linear layers a rank holds, by hand from the model section: per layer wq (or wq_a and
// wq_b), wkv_a, wkv_b and wo, the dense MLP's three or each of its routed experts' three (1/EP of
// them) and the shared experts' three; the head.
int64_t linearLayers(const ModelConfig& mc, int64_t EP = 1) {
    int64_t linears = 1;
    for (int64_t layer = 0; layer < mc.n_layers; ++layer)
        linears += (mc.q_lora_rank > 0 ? 5 : 4) +
                   (layer < mc.n_dense_layers ? 3 : 3 * mc.n_routed_experts / EP + (mc.n_shared_experts > 0 ? 3 : 0));
    return linears;
}

// Their elements, by hand from the shapes.
int64_t linearElements(const ModelConfig& mc) {
    const int64_t qk = mc.qk_nope_head_dim + mc.qk_rope_head_dim;
    int64_t n = mc.vocab_size * mc.dim;  // the head
    for (int64_t layer = 0; layer < mc.n_layers; ++layer) {
        n += mc.q_lora_rank > 0 ? mc.dim * mc.q_lora_rank + mc.q_lora_rank * mc.n_heads * qk : mc.dim * mc.n_heads * qk;
        n += mc.dim * (mc.kv_lora_rank + mc.qk_rope_head_dim) + mc.kv_lora_rank * mc.n_heads * (mc.qk_nope_head_dim + mc.v_head_dim);
        n += mc.n_heads * mc.v_head_dim * mc.dim;
        n += layer < mc.n_dense_layers ? 3 * mc.dim * mc.inter_dim
                                       : 3 * mc.dim * mc.moe_inter_dim * (mc.n_routed_experts + mc.n_shared_experts);
    }
    return n;
}

// Every rank's weights bitwise the reference's, in fp32 (the master, not the device's rounding).
void expectEqual(const std::vector<std::vector<torch::Tensor>>& weights,
                 const std::vector<std::vector<torch::Tensor>>& reference, const QString& what) {
    QCOMPARE(weights.size(), reference.size());
    for (size_t r = 0; r < weights.size(); ++r)
        for (size_t i = 0; i < weights[r].size(); ++i) {
            QCOMPARE(weights[r][i].scalar_type(), torch::kFloat32);
            QVERIFY2(torch::equal(weights[r][i], reference[r][i]),
                     qPrintable(what + QString(": rank %1 parameter %2 differs").arg(r).arg(i)));
        }
}

// A product's node as fp8LinearCuda is one (its wgrad out fp32 whatever W's dtype): passes x
// through and hands W a fixed fp32 gradient.
struct Fp32WeightGradient : torch::autograd::Function<Fp32WeightGradient> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                                 double value) {
        ctx->saved_data["value"] = value;
        ctx->saved_data["sizes"] = w.sizes().vec();
        return x.clone();
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        const auto sizes = ctx->saved_data["sizes"].toIntVector();
        return {grads[0], torch::full(sizes, ctx->saved_data["value"].toDouble(), torch::kFloat32), torch::Tensor()};
    }
};

}  // namespace

class TestBf16DeviceWeights : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Under fp8 on a GPU with offload the fp8 products take the bf16 device weights and return
    // their gradients in fp32 (docs/design/fp8.md section 8), which the recipe keeps unrounded:
    // autograd hands a node's fp32 gradient to a bf16 weight whose grad_dtype is fp32 as it is
    // (1 + 2^-20 has no bf16 form), and accumulates the next one in fp32 too. Without grad_dtype
    // the gradient would be rounded to the weight's bf16.
    void anFp32GradientReachesABf16WeightUnrounded() {
        const double value = 1.0 + std::ldexp(1.0, -20);
        torch::Tensor w = torch::zeros({3, 2}, torch::kBFloat16).requires_grad_(true);
        w.set_grad_dtype(torch::kFloat32);
        const torch::Tensor x = torch::ones({4}, torch::kFloat32).requires_grad_(true);
        Fp32WeightGradient::apply(x, w, value).sum().backward();
        Fp32WeightGradient::apply(x, w, value).sum().backward();
        QCOMPARE(w.grad().scalar_type(), torch::kFloat32);
        QVERIFY(torch::equal(w.grad(), torch::full({3, 2}, float(value) + float(value), torch::kFloat32)));
        torch::Tensor plain = torch::zeros({3, 2}, torch::kBFloat16).requires_grad_(true);
        Fp32WeightGradient::apply(x, plain, value).sum().backward();
        QCOMPARE(plain.grad().scalar_type(), torch::kBFloat16);
        QCOMPARE(plain.grad()[0][0].item<float>(), 1.0f);  // rounded: what grad_dtype avoids
    }

    // Every linear layer's weight is held in bf16 (counted by hand), the fp32 master on the host; the
    // weights every rank ends with after three steps, read from the master, are bitwise those of
    // the same split without offload in fp32 weights under autocast (its products round the same
    // weights the same way, and the weights' gradients come back fp32 either way), K 1 and 4, W
    // 1, 2 and 4, the sums on the device or the host, host memory and offload_dir.
    void bf16DeviceWeightsGiveAutocastsNumbers() {
        AutocastOnTheCpu autocast;
        QTemporaryDir dir;
        for (const SplitCase& k : std::vector<SplitCase>{{8, 1, 1, 1, 1}, {2, 4, 1, 2, 1}, {2, 2, 2, 1, 1}, {1, 4, 2, 2, 1},
                                                         {2, 1, 4, 2, 1}, {2, 2, 2, 1, 2}, {1, 2, 4, 2, 2}})
            for (bool sums_on_host : {false, true}) {
                if (sums_on_host && k.stage < 2) continue;
                const RunConfig plain = bf16Split(k.m, k.K, k.W, k.stage, k.EP);
                const int64_t linears = linearLayers(plain.model, k.EP);
                const auto reference = weightsAfter(plain, 3, false);
                for (const std::string& where : {std::string(), dir.path().toStdString()}) {
                    int64_t bf16 = -1;
                    const auto weights = weightsAfter(offloaded(plain, where), 3, false,
                                                      sums_on_host ? OffloadPath::HostStepSumsOnHost : OffloadPath::HostStep,
                                                      &bf16);
                    const QString what = QString("(%1,%2,%3) stage %4 EP %5 %6 %7").arg(k.m).arg(k.K).arg(k.W).arg(k.stage).arg(k.EP)
                                             .arg(sums_on_host ? "sums on the host" : "sums on the device")
                                             .arg(where.empty() ? "host" : "offload_dir");
                    QVERIFY2(bf16 == linears, qPrintable(what + QString(": %1 weights in bf16, %2 linear layers").arg(bf16).arg(linears)));
                    expectEqual(weights, reference, what);
                }
            }
    }

    // Stage 3 the same way: the shards of the linear layers' weights and every unit gathered from
    // them in bf16 (buckets of their own beside the norms' fp32 ones), the master on the host;
    // with offload optimizer (the shards on the device) and all (the shards in host memory or
    // offload_dir's file, in bf16), the sums on the device or the host, the experts over EP 2.
    // Bitwise without clipping: with it the clipping factor comes from the slices' norms, and
    // the split buckets cut the parameters into other slices (the fp64 sum of their squares in
    // another order): there within 1e-6 of the weights' scale after three clipped steps.
    void stage3Bf16ShardsGiveAutocastsNumbers() {
        AutocastOnTheCpu autocast;
        QTemporaryDir dir;
        struct Case {
            SplitCase split;
            const char* offload;
            bool on_nvme, sums_on_host;
        };
        for (const Case& c : std::vector<Case>{{{8, 1, 1, 3, 1}, "optimizer", false, false},
                                               {{2, 2, 2, 3, 1}, "optimizer", true, true},
                                               {{2, 2, 2, 3, 1}, "all", false, false},
                                               {{2, 1, 4, 3, 1}, "all", true, true},
                                               {{1, 4, 2, 3, 1}, "all", false, true},
                                               {{1, 2, 4, 3, 2}, "all", true, false},
                                               {{1, 2, 4, 3, 2}, "optimizer", false, true}}) {
            const SplitCase& k = c.split;
            RunConfig plain = bf16Split(k.m, k.K, k.W, k.stage, k.EP);
            plain.train.grad_clip = 0;
            const auto reference = weightsAfter(plain, 3, false);
            int64_t bf16 = -1;
            const auto weights =
                weightsAfter(offloaded(plain, c.on_nvme ? dir.path().toStdString() : "", c.offload), 3, false,
                             c.sums_on_host ? OffloadPath::HostStepSumsOnHost : OffloadPath::HostStep, &bf16);
            const QString what = QString("(%1,%2,%3) stage 3 EP %4 offload %5 %6 %7").arg(k.m).arg(k.K).arg(k.W).arg(k.EP)
                                     .arg(c.offload).arg(c.sums_on_host ? "sums on the host" : "sums on the device")
                                     .arg(c.on_nvme ? "offload_dir" : "host");
            QVERIFY2(bf16 == linearLayers(plain.model, k.EP),
                     qPrintable(what + QString(": %1 weights in bf16, %2 linear layers").arg(bf16).arg(linearLayers(plain.model, k.EP))));
            expectEqual(weights, reference, what);
        }
        RunConfig clipped = bf16Split(2, 2, 2, 3);
        const auto reference = weightsAfter(clipped, 3, false);
        const auto weights = weightsAfter(offloaded(clipped, "", "all"), 3, false, OffloadPath::HostStep);
        double worst = 0;
        for (size_t r = 0; r < weights.size(); ++r)
            for (size_t i = 0; i < weights[r].size(); ++i) {
                const double scale = reference[r][i].abs().max().item<double>();
                worst = std::max(worst, (weights[r][i] - reference[r][i]).abs().max().item<double>() / scale);
            }
        qInfo("stage 3, W 2, clipped: the largest difference from fp32 weights under autocast, over the weights' "
              "scale: %.3g",
              worst);
        QVERIFY2(worst <= 1e-6, qPrintable(QString("clipped: %1 of the weights' scale").arg(worst)));
    }


    // The checkpoint holds the fp32 master, not the device's bf16 rounding: every tensor of the
    // model written at stage 2, W 2 (at stage 1, W 4 with the experts over EP 2, gathered from
    // each expert's first replica; at stage 3, W 2; at stage 3 under offload all, W 4, EP 2)
    // equals the one the same split writes without offload.
    void theCheckpointHoldsTheMaster() {
        AutocastOnTheCpu autocast;
        auto checkpointOf = [](const RunConfig& config, OffloadPath path) {
            NamedTensors model;
            onRankTrainers(config, offloadPathOptions(path), [&](int r, RankTrainer& trainer) {
                trainSteps(trainer, 2);
                CheckpointTensors whole = trainer.gatherCheckpoint();
                if (r == 0) model = std::move(whole.model);
            });
            return model;
        };
        struct Case {
            RunConfig plain;
            const char* offload;
        };
        for (const Case& c : {Case{bf16Split(1, 2, 2, 2), "optimizer"}, Case{bf16Split(1, 2, 4, 1, 2), "optimizer"},
                              Case{bf16Split(1, 2, 2, 3), "optimizer"}, Case{bf16Split(1, 2, 4, 3, 2), "all"}}) {
            const RunConfig& plain = c.plain;
            const NamedTensors reference = checkpointOf(plain, OffloadPath::Device);
            const NamedTensors written = checkpointOf(offloaded(plain, "", c.offload), OffloadPath::HostStep);
            QCOMPARE(written.size(), reference.size());
            QVERIFY(!written.empty());
            // (by name: stage 3 writes them in its buckets' order, and bf16 splits those)
            std::map<std::string, torch::Tensor> by_name(reference.begin(), reference.end());
            for (const auto& [name, tensor] : written) {
                auto found = by_name.find(name);
                QVERIFY2(found != by_name.end(), name.c_str());
                QCOMPARE(tensor.scalar_type(), found->second.scalar_type());
                QVERIFY2(torch::equal(tensor.cpu(), found->second.cpu()), name.c_str());
            }
        }
    }

    // A checkpoint resumes into bf16 device weights with the master it holds, not the device's
    // rounding: two steps without offload, written; two more with bf16 device weights from it
    // (stage 2, W 2, the sums on the host; stage 3, W 2, offload all, unclipped: see above);
    // every rank's weights bitwise those of four steps without offload.
    void aCheckpointResumesIntoBf16Weights() {
        AutocastOnTheCpu autocast;
        QTemporaryDir dir;
        RunConfig stage3 = bf16Split(1, 2, 2, 3);
        stage3.train.grad_clip = 0;
        struct Case {
            RunConfig plain;
            const char* offload;
            OffloadPath path;
        };
        for (const Case& c : {Case{bf16Split(1, 2, 2, 2), "optimizer", OffloadPath::HostStepSumsOnHost},
                              Case{stage3, "all", OffloadPath::HostStep}}) {
            const RunConfig& plain = c.plain;
            const auto uninterrupted = weightsAfter(plain, 4, false);
            std::string written;
            onRankTrainers(plain, offloadPathOptions(OffloadPath::Device), [&](int r, RankTrainer& trainer) {
                trainSteps(trainer, 2);
                CheckpointTensors whole = trainer.gatherCheckpoint();
                if (r != 0) return;
                TrainerState state;
                state.step = 2;
                state.config_json = runConfigToJson(plain);
                written = writeCheckpoint(dir.path().toStdString() + "/stage" + std::to_string(plain.runtime.zero_stage),
                                          whole.model, whole.optimizer, state);
            });
            RankThreadOptions options = offloadPathOptions(c.path);
            options.resume_from = written;
            std::vector<std::vector<torch::Tensor>> resumed(plain.runtime.world_size);
            int64_t bf16 = 0;
            onRankTrainers(offloaded(plain, "", c.offload), options, [&](int r, RankTrainer& trainer) {
                trainSteps(trainer, 2, {}, /*first=*/2);
                resumed[r] = trainer.wholeParameters();
                if (r == 0)
                    for (const auto& p : trainer.model()->parameters()) bf16 += p.scalar_type() == torch::kBFloat16;
            });
            QCOMPARE(bf16, linearLayers(plain.model));
            expectEqual(resumed, uninterrupted, QString("stage %1").arg(plain.runtime.zero_stage));
        }
    }

    // The device's bytes: once the layout is made, the rank's device account holds 2 bytes less
    // for every element of the linear layers (counted by hand from their shapes) than the same
    // run with fp32 weights (runtime.dtype fp32: nothing rounded), stage 1, W 2.
    void theDeviceHoldsTwoBytesLessPerLinearWeight() {
        AutocastOnTheCpu autocast;
        auto heldAfterPrepare = [](const RunConfig& config) {
            std::vector<MemoryAccount*> accounts, host_accounts;
            RankThreadOptions options = offloadPathOptions(OffloadPath::HostStep);
            options.accounts = &accounts;
            options.host_accounts = &host_accounts;
            int64_t held = 0;
            onRankTrainers(config, options, [&](int r, RankTrainer&) {
                if (r == 0) held = accounts[0]->current.load();
            });
            return held;
        };
        RunConfig bf16 = offloaded(bf16Split(2, 2, 2, 1), "");
        RunConfig fp32 = bf16;
        fp32.runtime.dtype = "fp32";
        const int64_t with_bf16 = heldAfterPrepare(bf16), with_fp32 = heldAfterPrepare(fp32);
        const int64_t expected = 2 * linearElements(bf16.model);
        qInfo("stage 1, W 2: the rank's device account holds %lld bytes with fp32 weights, %lld with bf16 ones; the "
              "linear layers' elements x 2 by hand: %lld",
              (long long)with_fp32, (long long)with_bf16, (long long)expected);
        QVERIFY2(std::llabs((with_fp32 - with_bf16) - expected) <= 4096,
                 qPrintable(QString("%1 bytes less, %2 expected").arg(with_fp32 - with_bf16).arg(expected)));
        // Stage 3 under offload optimizer: the device keeps its shard of every unit, 1/W of the
        // weights, so 2 bytes less for each of its 1/W of the linear layers' elements.
        RunConfig bf16_s3 = offloaded(bf16Split(2, 2, 2, 3), "");
        RunConfig fp32_s3 = bf16_s3;
        fp32_s3.runtime.dtype = "fp32";
        const int64_t s3_bf16 = heldAfterPrepare(bf16_s3), s3_fp32 = heldAfterPrepare(fp32_s3);
        const int64_t s3_expected = 2 * linearElements(bf16_s3.model) / 2;
        qInfo("stage 3, W 2: %lld bytes with fp32 weights, %lld with bf16 ones; the linear layers' elements x 2 / W by "
              "hand: %lld",
              (long long)s3_fp32, (long long)s3_bf16, (long long)s3_expected);
        QVERIFY2(std::llabs((s3_fp32 - s3_bf16) - s3_expected) <= 4096,
                 qPrintable(QString("stage 3: %1 bytes less, %2 expected").arg(s3_fp32 - s3_bf16).arg(s3_expected)));
    }
};

QTEST_GUILESS_MAIN(TestBf16DeviceWeights)
#include "test_bf16_device_weights.moc"
