// Fuzz target: session files (lib/runtime/session_file.h) through the C ABI, as a host
// restores one: inlay_session_restore on a tiny model, then a short generation from the
// restored state when the file was accepted.
//
// Input: a session file. The harness rewrites its two checksums (when the input is long
// enough to hold them) before restoring, so that mutations reach the checks behind them;
// the checksum checks themselves are covered by tests/runtime/test_session_file.cpp.
// Seeds: sessions of that model saved after prompts of several lengths.
#include <cstring>
#include <string>
#include <vector>

#include "core/utf8.h"
#include "fuzz_support.h"
#include "support/gguf_fixtures.h"
#include "inlay/inlay.h"
#include "runtime/session_file.h"
#include "support/test_paths.h"

namespace inlay::fuzz {
namespace {

struct Fixture {
    inlay_model* model = nullptr;
    inlay_session* session = nullptr;

    Fixture() {
        test::TinyLlamaOptions o = tiny_model_options();
        const auto path = scratch_dir() / "tiny.gguf";
        write_file(path, to_string(test::make_tiny_llama_gguf(o)));
        inlay_model_params mp;
        inlay_model_params_init(&mp);
        mp.n_threads = 1;
        require(inlay_model_load(path.c_str(), &mp, &model), "inlay_model_load");
        require(inlay_session_create(model, nullptr, &session), "inlay_session_create");
    }
    ~Fixture() {
        inlay_session_free(session);
        inlay_model_free(model);
    }
    static void require(inlay_status s, const char* what) {
        if (s != INLAY_OK) finding(what, inlay_last_error());
    }
};

Fixture& fixture() {
    static Fixture f;
    return f;
}

template <class T>
T get(const std::string& b, size_t at) {
    T v;
    std::memcpy(&v, b.data() + at, sizeof v);
    return v;
}

// The checksums the writer would have stored for this header and payload.
void fix_checksums(std::string& b) {
    constexpr size_t kHeader = 128;
    if (b.size() < kHeader) return;
    auto span = [&](size_t at, size_t n) { return std::as_bytes(std::span<const char>(b.data() + at, n)); };
    const uint64_t body = b.size() - kHeader;
    const uint64_t n_tokens = get<uint64_t>(b, 72);
    const uint64_t token_bytes = n_tokens <= body / 4 ? n_tokens * 4 : body;
    const uint64_t payload = checksum64(span(kHeader + token_bytes, body - token_bytes),
                                        checksum64(span(kHeader, token_bytes), 0x5e55));
    std::memcpy(b.data() + 96, &payload, 8);
    const uint64_t header = checksum64(span(0, 120), 0);
    std::memcpy(b.data() + 120, &header, 8);
}

}  // namespace

std::vector<Seed> seeds() {
    Fixture& f = fixture();
    std::vector<Seed> out;
    const auto path = scratch_dir() / "seed.session";
    inlay_generate_params gp;
    inlay_generate_params_init(&gp);
    gp.temperature = 0;
    gp.ignore_eos = true;
    int n = 0;
    for (const auto& [prompt, max_tokens] :
         std::vector<std::pair<const char*, int>>{{"", 0}, {"ab", 0}, {"hello", 3}, {"a longer prompt that fills blocks", 20}}) {
        Fixture::require(inlay_session_reset(f.session), "inlay_session_reset");
        gp.max_tokens = max_tokens;
        inlay_result* result = nullptr;
        Fixture::require(inlay_session_generate(f.session, prompt, &gp, &result), "inlay_session_generate");
        inlay_result_free(result);
        Fixture::require(inlay_session_save(f.session, path.c_str()), "inlay_session_save");
        out.push_back({"session-" + std::to_string(n++), test::read_file(path)});
    }
    Fixture::require(inlay_session_reset(f.session), "inlay_session_reset");
    return out;
}

}  // namespace inlay::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace inlay;
    fuzz::Fixture& f = fuzz::fixture();
    std::string bytes(reinterpret_cast<const char*>(data), size);
    fuzz::fix_checksums(bytes);
    const auto path = fuzz::scratch_dir() / "input.session";
    fuzz::write_file(path, bytes);
    size_t before = 0;
    fuzz::Fixture::require(inlay_session_n_tokens(f.session, &before), "inlay_session_n_tokens");
    const inlay_status restored = inlay_session_restore(f.session, path.c_str());
    if (restored != INLAY_OK) {
        fuzz::check_message(inlay_last_error(), "inlay_session_restore");
        size_t after = 0;
        fuzz::Fixture::require(inlay_session_n_tokens(f.session, &after), "inlay_session_n_tokens");
        if (after != before) fuzz::finding("inlay_session_restore", "a refused file changed the session");
        return 0;
    }
    // The restored conversation must continue (or say clearly why not).
    inlay_generate_params gp;
    inlay_generate_params_init(&gp);
    gp.temperature = 0;
    gp.max_tokens = 2;
    gp.ignore_eos = true;
    inlay_result* result = nullptr;
    const inlay_status generated = inlay_session_generate(f.session, "x", &gp, &result);
    if (generated != INLAY_OK) fuzz::check_message(inlay_last_error(), "generate after restore");
    if (generated == INLAY_OK && utf8::find_invalid(inlay_result_text(result)) != std::string_view::npos)
        fuzz::finding("generate after restore", "result text is not valid UTF-8");
    inlay_result_free(result);
    fuzz::Fixture::require(inlay_session_reset(f.session), "inlay_session_reset");
    return 0;
}
