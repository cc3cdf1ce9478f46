// StepTimeChart: the predicted step on the target as a bar of its phases, for the window's order the plan runs and, where the order matters, the other one.
#pragma once

#include <cstdint>
#include <vector>

#include <QColor>
#include <QString>
#include <QWidget>

#include "trainbench/memory_plan.h"
#include "trainbench/run_config.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"

namespace trainbench::gui {

// A step is the window's K micro-batches, each paced by the longest of its overlapped terms
// (compute, collectives, PCIe up or down, NVMe reads, the node's host memory), then the tail
// after the last backward: the CPU AdamW step with the NVMe moves pipelined beside it (paced by
// the longest of those), and the updated weights up. Each row draws that as one bar of three
// phases, each coloured by the term that paces it, with the step and the bound the planner names
// (predictStepTime) beside it; under the bar, each term's seconds over the whole step, which
// overlap, so their sum exceeds the step. With the weights streamed and whole blocks recomputed
// the window's order changes the step: a row for each order, the planned one first.
//
// Object name: stepTimeChart. No height while no step time is known (no target figures).
class StepTimeChart : public QWidget {
    Q_OBJECT

public:
    // One phase of a step: the term that paces it and its seconds.
    struct Phase {
        QString term;
        double seconds = 0;
    };
    // One term's seconds over the step (K times a micro-batch's, and its share of the tail).
    struct TermTotal {
        QString term;
        double seconds = 0;
    };
    struct Row {
        QString label;  // "by micro-batch (planned)"
        StepTimePlan time;
        int64_t accumulation_steps = 1;
        bool fits = true;
    };

    explicit StepTimeChart(QWidget* parent = nullptr);

    // The rows of `plan` (planOnTarget of `placed`) and, where the order matters, the other order.
    void showPlan(const RunConfig& placed, const MemoryPlan& plan, const TargetMachine& target);
    const std::vector<Row>& rows() const { return rows_; }
    // Whether the planned order's step is known (the chart takes room only then).
    bool hasStep() const;

    // The window, the tail and the weights going up, each with the term that paces it; phases
    // of no length are left out. Their seconds add up to time.step_s.
    static std::vector<Phase> phases(const StepTimePlan& time, int64_t accumulation_steps);
    static std::vector<TermTotal> termTotals(const StepTimePlan& time, int64_t accumulation_steps);
    // The colour every view of the chart gives a term.
    static QColor termColor(const QString& term);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    std::vector<Row> rows_;
};

}  // namespace trainbench::gui
