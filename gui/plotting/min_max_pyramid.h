// MinMaxPyramid: a long curve reduced to what a plot of a given width can show.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainbench::gui {

struct CurvePoint {
    double x;
    double y;
};

// Levels of blocks of 2^k consecutive points (k >= 3), each block remembering its lowest and
// highest point. A view of n points at c pixel columns then costs at most about 8c points,
// whatever n: the smallest level with fewer than 4 blocks per column gives each column the
// extremes of its blocks, so the envelope drawn is the one every point would draw. (Between
// 2 and 4 blocks a column, so more than 2 points a column: QCustomPlot's adaptive sampling
// then draws each column as one vertical stroke, far cheaper than a zig-zag polyline.)
// Memory: about 2 bytes per point.
class MinMaxPyramid {
public:
    // `xs` ascending (step or tokens); `ys` may hold NaN (a gap).
    MinMaxPyramid(std::vector<double> xs, std::vector<double> ys);

    // One more point at the end (x not below the last one): O(levels), the levels the
    // constructor would have built for the longer curve.
    void append(double x, double y);

    size_t size() const { return xs_.size(); }
    const std::vector<double>& xs() const { return xs_; }
    const std::vector<double>& ys() const { return ys_; }

    // The points to draw for keys in [x_lower, x_upper] at `columns` pixel columns, in x order:
    // every point in range when there are at most 8 x columns of them; else each block's
    // lowest and highest point. Either way the first point on each side outside the range is
    // included (lines run to the frame), and so are the range's first and last points.
    // `level` (optional) receives k: 0 for every point, else blocks of 2^k.
    std::vector<CurvePoint> visible(double x_lower, double x_upper, int columns, int* level = nullptr) const;

private:
    static constexpr int kFirstLevel = 3;
    static constexpr uint32_t kNone = UINT32_MAX;  // a block with no finite value
    struct Extremes {
        uint32_t low;   // index of the block's lowest point
        uint32_t high;  // index of its highest point
    };
    // Widens `e` to point `index` when its value is finite.
    void include(Extremes& e, uint32_t index) const;
    // The level above `below`: each of its blocks merges two blocks of `below`.
    std::vector<Extremes> merged(const std::vector<Extremes>& below) const;

    std::vector<double> xs_, ys_;
    std::vector<std::vector<Extremes>> levels_;  // levels_[i]: blocks of 2^(kFirstLevel + i) points
};

}  // namespace trainbench::gui
