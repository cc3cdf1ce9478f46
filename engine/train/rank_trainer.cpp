// The rank loop. Loss maths (ACCUMULATION.md): back-propagate raw token-loss sums S[k], count the
// targets N[k], and after the window scale gradients by 1/N with N = sum_k N[k]; then clip, step.
#include "train/rank_trainer.h"

#include <sys/resource.h>

#include <cmath>
#include <sstream>

#include "data/batch_sampler.h"
#include "data/evaluate.h"
#include "data/token_source.h"
#include "model/transformer.h"
#include "train/lr_schedule.h"

namespace trainbench {
namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int64_t hostPeakBytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

bool isNormOrBias(const std::string& name, const torch::Tensor& p) {
    return p.dim() < 2 || name.find("norm") != std::string::npos;
}

// AdamW with decoupled weight decay on matrices only (norms and biases are not decayed).
std::unique_ptr<torch::optim::AdamW> makeOptimizer(Transformer& model, const TrainConfig& t) {
    std::vector<torch::Tensor> decay, no_decay;
    for (auto& item : model->named_parameters())
        (isNormOrBias(item.key(), item.value()) ? no_decay : decay).push_back(item.value());
    auto options = torch::optim::AdamWOptions(t.lr).betas({t.beta1, t.beta2}).eps(1e-8);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(options.weight_decay(t.weight_decay)));
    groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(options.weight_decay(0.0)));
    return std::make_unique<torch::optim::AdamW>(std::move(groups), options);
}

class RankLoop {
public:
    explicit RankLoop(const RankSetup& setup)
        : s_(setup), cfg_(*setup.config), device_(setup.device), model_(cfg_.model) {}

    RankResult run() {
        RankResult result;
        source_ = openTokenSource(cfg_);
        initializeWeights(model_, static_cast<uint64_t>(cfg_.train.seed));
        model_->to(device_);
        model_->train();
        optimizer_ = makeOptimizer(model_, cfg_.train);
        params_ = model_->parameters();
        moe_layers_ = model_->moeLayers();
        moe_indices_ = model_->moeLayerIndices();
        if (source_->entropyFloor() >= 0 && s_.rank == 0)
            publishPoints({point(0, 0, "data/entropy_floor", source_->entropyFloor())});

        const TrainConfig& t = cfg_.train;
        int64_t bad_steps = 0;
        double last_loss = std::nan("");
        double tokens_per_s = 0;
        for (int64_t step = 0; step < t.steps; ++step) {
            auto step_start = std::chrono::steady_clock::now();
            optimizer_->zero_grad(/*set_to_none=*/true);
            auto loss_sum = torch::zeros({}, torch::TensorOptions(device_).dtype(torch::kFloat64));
            auto count = torch::zeros({}, torch::TensorOptions(device_).dtype(torch::kInt64));
            for (int64_t k = 0; k < t.gradient_accumulation_steps; ++k) {
                if (!s_.control->passBoundary()) {
                    // Stop inside a window: the partial window is dropped, nothing is stepped.
                    result.status = RunStatus::Stopped;
                    return finish(result, step, last_loss, tokens_per_s);
                }
                auto indices = sourceSampleIndices(
                    sampleIndices(step, s_.rank, k, t.micro_batch_size, t.gradient_accumulation_steps, s_.world_size),
                    source_->sampleCount(Split::Train, t.seq_len + 1), static_cast<uint64_t>(t.seed));
                MicroBatch batch = readMicroBatch(*source_, Split::Train, indices, t.seq_len);
                LossParts parts = model_->loss(batch.tokens.to(device_), batch.targets.to(device_));
                (parts.token_loss_sum + parts.aux_loss_sum).backward();
                loss_sum += parts.token_loss_sum.detach().to(torch::kFloat64);
                count += parts.token_count;
            }
            // The step's one host synchronisation: the window's loss sum and target count.
            auto totals = torch::stack({loss_sum, count.to(torch::kFloat64)}).cpu();
            const double window_loss = totals[0].item<double>();
            const int64_t tokens = static_cast<int64_t>(totals[1].item<double>());

            std::vector<torch::Tensor> loads;
            for (auto& moe : moe_layers_) loads.push_back(moe->takeLoad());

            if (tokens == 0) {
                publishEvent(step + 1, "warning", "step " + std::to_string(step + 1) +
                                                      " has no counted target tokens; update skipped");
                continue;
            }
            const double mean_loss = window_loss / double(tokens);
            const double grad_norm = scaleAndMeasure(1.0 / double(tokens));
            if (!std::isfinite(mean_loss) || !std::isfinite(grad_norm)) {
                ++bad_steps;
                std::ostringstream why;
                why << "step " << step + 1 << " skipped on rank " << s_.rank << ": loss " << mean_loss
                    << ", grad norm " << grad_norm;
                publishEvent(step + 1, "skipped_step", why.str());
                if (bad_steps >= t.max_bad_steps) {
                    result.status = RunStatus::Failed;
                    result.error = std::to_string(bad_steps) + " consecutive non-finite steps (train.max_bad_steps)";
                    return finish(result, step, last_loss, tokens_per_s);
                }
                continue;
            }
            bad_steps = 0;
            if (t.grad_clip > 0 && grad_norm > t.grad_clip) scaleGradients(t.grad_clip / (grad_norm + 1e-6));
            const double lr = learningRate(t, step);
            for (auto& group : optimizer_->param_groups())
                static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
            optimizer_->step();
            updateBalancingBias(loads);

            tokens_seen_ += tokens;
            last_loss = mean_loss;
            const double step_time = secondsSince(step_start);
            tokens_per_s = double(tokens) / step_time;
            s_.completed_steps->store(step + 1);
            if (s_.rank == 0 && ((step + 1) % t.log_every == 0 || step + 1 == t.steps))
                publishStep(step + 1, mean_loss, grad_norm, lr, tokens_per_s, step_time, loads);
            if (s_.rank == 0 && t.eval_every > 0 && ((step + 1) % t.eval_every == 0 || step + 1 == t.steps)) {
                EvalResult eval = evaluateModel(model_, *source_, cfg_, device_);
                publishPoints({point(step + 1, tokens_seen_, "eval/loss", eval.loss)});
            }
        }
        result.status = RunStatus::Completed;
        return finish(result, t.steps, last_loss, tokens_per_s);
    }

private:
    RankResult& finish(RankResult& result, int64_t steps, double last_loss, double tokens_per_s) {
        result.steps = steps;
        result.tokens = tokens_seen_;
        result.final_loss = last_loss;
        result.tokens_per_s = tokens_per_s;
        result.peak_memory_bytes = hostPeakBytes();
        return result;
    }

    // Scales every gradient by `factor` (materialising zeros for parameters no micro-batch
    // touched, e.g. an unused expert) and returns the global L2 norm after scaling.
    double scaleAndMeasure(double factor) {
        torch::NoGradGuard no_grad;
        std::vector<torch::Tensor> norms;
        for (auto& p : params_) {
            if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
            p.grad().mul_(factor);
            norms.push_back(at::linalg_vector_norm(p.grad(), 2, c10::nullopt, false, torch::kFloat64));
        }
        return torch::stack(norms).norm().item<double>();
    }

    void scaleGradients(double factor) {
        torch::NoGradGuard no_grad;
        for (auto& p : params_) p.grad().mul_(factor);
    }

    void updateBalancingBias(const std::vector<torch::Tensor>& loads) {
        for (size_t i = 0; i < moe_layers_.size(); ++i)
            moe_layers_[i]->updateBias(loads[i], cfg_.model.bias_update_speed);
    }

    MetricPoint point(int64_t step, int64_t tokens, const std::string& key, double value) const {
        return MetricPoint{step, tokens, secondsSince(s_.started), key, value};
    }

    void publishStep(int64_t step, double loss, double grad_norm, double lr, double tokens_per_s, double step_time,
                     const std::vector<torch::Tensor>& loads) {
        std::vector<MetricPoint> points = {
            point(step, tokens_seen_, "train/loss", loss),
            point(step, tokens_seen_, "train/grad_norm", grad_norm),
            point(step, tokens_seen_, "train/lr", lr),
            point(step, tokens_seen_, "train/tokens", double(tokens_seen_)),
            point(step, tokens_seen_, "perf/tokens_per_s", tokens_per_s),
            point(step, tokens_seen_, "perf/step_time_s", step_time),
        };
        for (size_t i = 0; i < loads.size(); ++i) {
            auto load = loads[i].to(torch::kCPU, torch::kFloat64);
            double mean = load.mean().item<double>();
            double ratio = mean > 0 ? load.max().item<double>() / mean : 0.0;
            points.push_back(point(step, tokens_seen_,
                                   "moe/layer" + std::to_string(moe_indices_[i]) + "/load_max_over_mean", ratio));
        }
        publishPoints(std::move(points));
    }

    void publishPoints(std::vector<MetricPoint> points) {
        if (s_.bus) s_.bus->publish(std::move(points));
    }

    void publishEvent(int64_t step, const std::string& kind, const std::string& message) {
        if (s_.bus && s_.rank == 0) s_.bus->publish(RunEvent{step, secondsSince(s_.started), kind, message});
    }

    const RankSetup& s_;
    const RunConfig& cfg_;
    torch::Device device_;
    Transformer model_;
    std::unique_ptr<TokenSource> source_;
    std::unique_ptr<torch::optim::AdamW> optimizer_;
    std::vector<torch::Tensor> params_;
    std::vector<MoE> moe_layers_;
    std::vector<int64_t> moe_indices_;
    int64_t tokens_seen_ = 0;
};

}  // namespace

RankResult runRank(const RankSetup& setup) {
    try {
        RankLoop loop(setup);
        return loop.run();
    } catch (const c10::Error& e) {
        RankResult failed;
        failed.status = RunStatus::Failed;
        failed.error = e.what_without_backtrace();
        return failed;
    } catch (const std::exception& e) {
        RankResult failed;
        failed.status = RunStatus::Failed;
        failed.error = e.what();
        return failed;
    }
}

}  // namespace trainbench
