// ptxas's resource report of the build: no kernel of kernels/cuda spills, on any
// architecture it was built for (every one in INLAY_CUDA_ARCHS, at least one).
//
// The reports are written while the library compiles (kernels/cuda/ptxas_report.sh,
// nvcc --resource-usage), one file per .cu in INLAY_PTXAS_REPORT_DIR, so this check
// costs no compilation of its own.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, sep))
        if (!item.empty()) out.push_back(item);
    return out;
}

struct KernelReport {
    std::string name;
    std::string arch;  // "sm_90"
    int registers = -1;
    long stack = -1, spill_stores = -1, spill_loads = -1;
};

// The number just before `suffix` in line ("... 12 bytes spill stores" -> 12), or -1.
long number_before(const std::string& line, const std::string& suffix) {
    const size_t at = line.find(suffix);
    if (at == std::string::npos || at == 0) return -1;
    size_t b = at;
    while (b > 0 && line[b - 1] == ' ') --b;
    size_t e = b;
    while (b > 0 && line[b - 1] >= '0' && line[b - 1] <= '9') --b;
    return b == e ? -1 : std::stol(line.substr(b, e - b));
}

// The text between the first pair of single quotes after `from`.
std::string quoted(const std::string& line, size_t from) {
    const size_t a = line.find('\'', from);
    const size_t b = a == std::string::npos ? a : line.find('\'', a + 1);
    return b == std::string::npos ? std::string() : line.substr(a + 1, b - a - 1);
}

// Parses "Compiling entry function 'K' for 'sm_XX'", then "Function properties for K",
// "N bytes stack frame, S bytes spill stores, L bytes spill loads", "Used R registers".
std::vector<KernelReport> parse(std::istream& in) {
    const std::string entry = "Compiling entry function ";
    std::vector<KernelReport> out;
    std::string line;
    while (std::getline(in, line)) {
        const size_t e = line.find(entry);
        if (e != std::string::npos) {
            KernelReport k;
            k.name = quoted(line, e);
            const size_t f = line.find(" for ", e + entry.size() + k.name.size());
            k.arch = f == std::string::npos ? std::string() : quoted(line, f);
            out.push_back(k);
        } else if (!out.empty() && line.find("bytes stack frame") != std::string::npos) {
            out.back().stack = number_before(line, "bytes stack frame");
            out.back().spill_stores = number_before(line, "bytes spill stores");
            out.back().spill_loads = number_before(line, "bytes spill loads");
        } else if (!out.empty() && line.find("registers") != std::string::npos) {
            out.back().registers = static_cast<int>(number_before(line, "registers"));
        }
    }
    return out;
}

// The build's report folder; INLAY_PTXAS_REPORT_DIR in the environment names another
// (scripts/gpu-check.sh carries the reports to a machine where the build path differs).
std::string report_dir() {
    const char* dir = std::getenv("INLAY_PTXAS_REPORT_DIR");
    return dir != nullptr && *dir != '\0' ? std::string(dir) : std::string(INLAY_PTXAS_REPORT_DIR);
}

}  // namespace

TEST_CASE("no kernel spills registers on any architecture (ptxas report of the build)", "[kernels][ptxas]") {
    std::set<std::string> built;
    for (const std::string& a : split(INLAY_CUDA_ARCHS, '|')) {
        std::string digits;
        for (char c : a) {
            if (c < '0' || c > '9') break;
            digits += c;
        }
        if (!digits.empty()) built.insert("sm_" + digits);
    }
    INFO("INLAY_CUDA_ARCHS=" << INLAY_CUDA_ARCHS);
    REQUIRE(!built.empty());  // every configured architecture is checked below

    // Kernels expected per architecture in each file (a report that misses them is stale
    // or was not parsed).
    // paged_attention.cu: 16 shapes + the merge kernel; paged_attention_generic.cu: f16, f32
    // KV; gemv_*.cu: 3 formats x NT 1,2,4,8; embed_rows.cu: 9 formats x f32/f16 output;
    // round_to_half.cu: f16, bf16; flash_prefill.cu: head_dim 64, 128.
    const std::map<std::string, int> expected = {{"paged_attention.cu", 17},
                                                 {"paged_attention_generic.cu", 2},
                                                 {"flash_prefill.cu", 2},
                                                 {"gemv_float.cu", 12},
                                                 {"gemv_block32.cu", 12},
                                                 {"gemv_kquant.cu", 12},
                                                 {"embed_rows.cu", 18},
                                                 {"round_to_half.cu", 2},
                                                 {"argmax_rows.cu", 1},
                                                 {"sample_rows.cu", 1},
                                                 {"rms_norm.cu", 2},
                                                 {"swiglu.cu", 2},
                                                 {"add.cu", 1},
                                                 {"feed_tokens.cu", 1},
                                                 {"qk_norm_rope_kv_append.cu", 1}};
    const std::vector<std::string> sources = split(INLAY_DEVICE_SOURCES, '|');
    REQUIRE(sources.size() == expected.size());
    for (const std::string& src : sources) {
        INFO(src);
        const std::string path = report_dir() + "/" + src + ".txt";
        std::ifstream in(path);
        INFO("report " << path);
        REQUIRE(in);
        const std::vector<KernelReport> kernels = parse(in);
        std::map<std::string, int> per_arch;
        for (const KernelReport& k : kernels) {
            INFO(k.name << " for " << k.arch << ": " << k.registers << " registers, " << k.stack << " bytes stack, "
                        << k.spill_stores << " bytes spill stores, " << k.spill_loads << " bytes spill loads");
            CHECK(k.spill_stores == 0);
            CHECK(k.spill_loads == 0);
            CHECK(k.registers > 0);
            ++per_arch[k.arch];
        }
        for (const std::string& arch : built) {
            INFO(arch);
            REQUIRE(expected.count(src) == 1);
            CHECK(per_arch[arch] == expected.at(src));
        }
    }
}
