// InferenceCacheBox: the batch panel's line on decoding's attention cache (generate, samples), in both forms of MLA.
#pragma once

#include <QGroupBox>

#include "trainbench/memory_plan.h"
#include "trainbench/run_config.h"

class QLabel;

namespace trainbench::gui {

// What planInferenceCache gives for the shown model: model.max_batch_size rows of
// model.max_seq_len positions in every layer, at bf16 as the reference keeps them, per token and
// in all, naive (each head's key and value) and absorbed (the latent and the shared rotary key).
// It is the cache of decoding, not training memory: the memory plan above never counts it.
//
// Labels that tests read carry object names: inferenceCacheBox (the box), inferenceCacheShapeLabel,
// inferenceNaivePerTokenLabel, inferenceNaiveTotalLabel, inferenceAbsorbedPerTokenLabel,
// inferenceAbsorbedTotalLabel, inferenceCacheNoteLabel.
class InferenceCacheBox : public QGroupBox {
    Q_OBJECT

public:
    explicit InferenceCacheBox(QWidget* parent = nullptr);

    void setModelConfig(const ModelConfig& model);
    const InferenceCachePlan& plan() const { return plan_; }

private:
    InferenceCachePlan plan_;
    QLabel* shape_label_ = nullptr;
    QLabel* total_header_ = nullptr;
    QLabel* naive_per_token_ = nullptr;
    QLabel* naive_total_ = nullptr;
    QLabel* absorbed_per_token_ = nullptr;
    QLabel* absorbed_total_ = nullptr;
};

}  // namespace trainbench::gui
