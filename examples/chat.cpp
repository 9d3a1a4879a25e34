// chat: a two-turn conversation on one session with the C++ wrapper (inlay.hpp).
//
//     chat MODEL [FIRST [SECOND]]
//
// The session keeps the conversation's KV cache, so the second turn only processes its
// own new tokens; the program prints the prompt token counts from the timings to show
// it. The environment variable INLAY_N_THREADS, if set, chooses the compute threads.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "inlay/inlay.hpp"

namespace {

// One turn: appends `text` to the conversation, streams the reply, reports the counts.
void turn(inlay::Session& session, int number, const std::string& text) {
    const size_t before = session.n_tokens();
    std::cout << "[turn " << number << "] > " << text << "\n";
    inlay::GenerateOptions options;
    options.params.max_tokens = 48;
    options.params.seed = 42;  // sampled, but the same every run
    options.stop = {"\n\n"};
    const inlay::Result reply = session.generate(text, options, [](int32_t, std::string_view piece) {
        std::cout << piece << std::flush;
        return true;
    });
    const inlay_timings t = reply.timings();
    std::cout << "\n[turn " << number << "] history before: " << before << " tokens; new prompt tokens: "
              << reply.prompt_tokens().size() << "; prompt tokens processed: " << t.prompt_tokens
              << "; generated: " << t.generated_tokens << "; history after: " << session.n_tokens() << " tokens\n";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 4) {
        std::cerr << "usage: " << argv[0] << " MODEL [FIRST [SECOND]]\n";
        return 2;
    }
    const std::string first = argc > 2 ? argv[2] : "Once upon a time, there was a little dog.";
    const std::string second = argc > 3 ? argv[3] : " The next day, the dog";
    try {
        inlay::ModelOptions options;
        if (const char* threads = std::getenv("INLAY_N_THREADS")) options.n_threads = std::atoi(threads);
        const inlay::Model model = inlay::Model::load(argv[1], options);
        inlay::Session session(model);
        turn(session, 1, first);
        turn(session, 2, second);
    } catch (const inlay::Error& e) {
        std::cerr << "chat: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
