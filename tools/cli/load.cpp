#include "load.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "app.h"
#include "args.h"
#include "device_option.h"

namespace inlay::cli {
namespace {

// Draws "loading [#####.....]  50%" in place; redraws only when the percentage changes.
class ProgressBar {
public:
    bool update(float progress) {
        const int percent = static_cast<int>(std::clamp(progress, 0.0f, 1.0f) * 100.0f + 0.5f);
        if (percent == last_) return true;
        last_ = percent;
        constexpr int width = 30;
        const int filled = percent * width / 100;
        fmt::print(stderr, "\rloading [{}{}] {:3d}%", std::string(static_cast<size_t>(filled), '#'),
                   std::string(static_cast<size_t>(width - filled), '.'), percent);
        if (percent == 100) fmt::print(stderr, "\n");
        std::fflush(stderr);
        return true;
    }
    // Ends the line if the bar was left unfinished (failed load).
    void finish() const {
        if (last_ >= 0 && last_ < 100) fmt::print(stderr, "\n");
    }

private:
    int last_ = -1;
};

}  // namespace

void apply_device(const std::string& text, ModelOptions& options) {
    const inlay::DeviceRequest r = device_option(text);
    options.device = r.kind == inlay::DeviceKind::cpu    ? INLAY_DEVICE_CPU
                     : r.kind == inlay::DeviceKind::cuda ? INLAY_DEVICE_CUDA
                                                         : INLAY_DEVICE_AUTO;
    options.device_index = r.index;
}

LoadedModel load_model(const std::string& path, int32_t n_threads, int32_t context_length, bool show_progress,
                       const std::string& device, int64_t kv_budget_bytes) {
    ModelOptions options;
    options.kv_budget_bytes = kv_budget_bytes;
    apply_device(device, options);
    options.n_threads = n_threads;
    options.context_length = context_length;
    ProgressBar bar;
    if (show_progress && isatty(STDERR_FILENO)) {
        options.progress = [&bar](float p) { return bar.update(p); };
    }
    const double start = now_seconds();
    try {
        Model model = Model::load(path, options);
        return LoadedModel{std::move(model), now_seconds() - start};
    } catch (...) {
        bar.finish();
        throw;
    }
}

}  // namespace inlay::cli
