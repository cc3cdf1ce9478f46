// ConfigBox: the side panel's read-only numbers of the config shown (parameters, batch, steps, schedule, device).
#pragma once

#include <QGroupBox>

#include "trainbench/run_config.h"

class QFormLayout;
class QLabel;

namespace trainbench::gui {

// Object names tests find: configBox, configNameLabel, totalParamsLabel, activatedParamsLabel,
// modelShapeLabel, batchLabel, tokensPerStepLabel, seqLenLabel, stepsLabel, lrLabel,
// scheduleLabel, deviceLabel, targetLabel (its row shown while the target is not this machine).
class ConfigBox : public QGroupBox {
    Q_OBJECT

public:
    explicit ConfigBox(QWidget* parent = nullptr);

    // `origin` says where the config comes from (a file name, or a watched run); a watched
    // run's config is titled so, since Start trains the window's own config instead.
    void showConfig(const RunConfig& config, const QString& origin, bool watched);

private:
    QFormLayout* form_ = nullptr;
    QLabel* name_label_ = nullptr;
    QLabel* total_params_label_ = nullptr;
    QLabel* activated_params_label_ = nullptr;
    QLabel* model_shape_label_ = nullptr;
    QLabel* batch_label_ = nullptr;
    QLabel* tokens_per_step_label_ = nullptr;
    QLabel* seq_len_label_ = nullptr;
    QLabel* steps_label_ = nullptr;
    QLabel* lr_label_ = nullptr;
    QLabel* schedule_label_ = nullptr;
    QLabel* device_label_ = nullptr;
    QLabel* target_label_ = nullptr;
};

}  // namespace trainbench::gui
