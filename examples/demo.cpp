// demo_cpp: the tour of examples/demo.c with the C++ RAII wrapper (inlay.hpp): errors as
// exceptions, a progress bar, streaming, a cancel from another thread, a two-turn chat
// through the model's own template, and the device choice.
//
//     demo_cpp MODEL [auto|cpu|cuda]
//
// Exit status 0 when every step behaved as described, 1 otherwise.
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "inlay/inlay.hpp"

namespace {

const char* stop_name(inlay_stop_reason reason) {
    static const char* const names[] = {"none",     "eog",       "max_tokens",  "stop string",
                                        "callback", "cancelled", "context full"};
    return static_cast<unsigned>(reason) < std::size(names) ? names[reason] : "?";
}

// A progress bar of 30 cells on stderr, redrawn in place.
bool progress_bar(float progress) {
    const int cells = static_cast<int>(progress * 30.0f + 0.5f);
    std::fprintf(stderr, "\r  loading [%s%s] %3d%%", std::string(static_cast<size_t>(cells), '#').c_str(),
                 std::string(static_cast<size_t>(30 - cells), ' ').c_str(), static_cast<int>(progress * 100.0f + 0.5f));
    if (progress >= 1.0f) std::fputc('\n', stderr);
    return true;
}

// Loads `path` on `device`; a device this machine or build cannot serve is reported and
// the CPU is used instead.
inlay::Model load(const std::string& path, inlay_device device) {
    inlay::ModelOptions options;
    options.progress = progress_bar;
    options.device = device;
    try {
        return inlay::Model::load(path, options);
    } catch (const inlay::Error& e) {
        if (e.status() != INLAY_ERR_UNSUPPORTED || device == INLAY_DEVICE_CPU) throw;
        std::cerr << "\n  that device is not available here (" << e.what() << "); using the CPU\n";
        options.device = INLAY_DEVICE_CPU;
        return inlay::Model::load(path, options);
    }
}

bool print(int32_t, std::string_view piece) {
    std::cout << piece << std::flush;
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        std::cerr << "usage: " << argv[0] << " MODEL [auto|cpu|cuda]\n";
        return 2;
    }
    inlay_device device = INLAY_DEVICE_AUTO;
    if (argc == 3) {
        const std::string d = argv[2];
        if (d == "cpu") device = INLAY_DEVICE_CPU;
        else if (d == "cuda") device = INLAY_DEVICE_CUDA;
        else if (d != "auto") {
            std::cerr << "demo_cpp: unknown device '" << d << "' (auto, cpu or cuda)\n";
            return 2;
        }
    }
    bool ok = true;
    try {
        std::cout << "== error handling\n";
        try {
            (void)inlay::Model::load("no/such/model.gguf");
            ok = false;
        } catch (const inlay::Error& e) {
            std::cout << "  " << e.what() << "\n";
            ok = ok && e.status() == INLAY_ERR_IO;
        }

        std::cout << "\n== loading " << argv[1] << std::endl;
        const inlay::Model model = load(argv[1], device);
        const inlay_model_info info = model.info();
        std::cout << "  " << info.architecture << " model, " << info.n_params << " parameters, " << info.n_layers
                  << " layers, on " << info.device << "\n";
        inlay::Session session(model);

        std::cout << "\n== streaming (greedy)\n";
        inlay::GenerateOptions greedy;
        greedy.params.temperature = 0.0f;
        greedy.params.max_tokens = 48;
        const inlay::Result streamed = session.generate("You will", greedy, print);
        std::cout << "\n  [stop: " << stop_name(streamed.stop_reason()) << "]\n";
        session.reset();

        std::cout << "\n== cancel from another thread (after 5 tokens)\n";
        {
            // The generating thread, at its 5th token, wakes the canceller and waits until
            // it has called cancel(), so the demo does not depend on thread timing.
            std::mutex lock;
            std::condition_variable changed;
            int tokens = 0;
            bool cancelled = false;
            std::thread canceller([&] {
                std::unique_lock<std::mutex> l(lock);
                changed.wait(l, [&] { return tokens >= 5; });
                session.cancel();  // safe from any thread
                cancelled = true;
                changed.notify_all();
            });
            inlay::GenerateOptions options = greedy;
            options.params.max_tokens = 200;
            options.params.ignore_eos = true;
            const inlay::Result r = session.generate("Once upon a time", options, [&](int32_t, std::string_view piece) {
                std::cout << piece << std::flush;
                std::unique_lock<std::mutex> l(lock);
                if (++tokens == 5) {
                    changed.notify_all();
                    changed.wait(l, [&] { return cancelled; });
                }
                return true;
            });
            canceller.join();
            // A cancelled generation is not an error in inlay.hpp: its result says why it ended.
            std::cout << "\n  [stop: " << stop_name(r.stop_reason()) << " after " << r.tokens().size()
                      << " of at most 200 tokens]\n";
            ok = ok && r.stop_reason() == INLAY_STOP_CANCELLED;
        }
        session.reset();

        std::cout << "\n== chat, two turns through the model's chat template\n";
        std::vector<inlay::ChatMessage> messages = {{"user", "What is the secret of happiness?"}};
        inlay::GenerateOptions sampled;
        sampled.params.max_tokens = 40;
        sampled.params.seed = 7;
        sampled.stop = {"\n"};  // one line per reply, as the template writes them
        for (const std::string next : {"And what about money?", ""}) {
            std::cout << "  user: " << messages.back().content << "\n  assistant:" << std::flush;
            const inlay::Result reply = session.chat(messages, {}, sampled, print);  // {}: the model's template
            std::cout << "\n  [this turn processed " << reply.timings().prompt_tokens << " new prompt tokens]\n";
            if (next.empty()) break;
            messages.push_back({"assistant", std::string(reply.text())});
            messages.push_back({"user", next});
        }
    } catch (const inlay::Error& e) {
        std::cerr << "demo_cpp: " << e.what() << "\n";
        return 1;
    }
    return ok ? 0 : 1;
}
