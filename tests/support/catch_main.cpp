// The main of every Catch2 test program. A program may define inlay_test_skip_reason()
// (a precondition such as "a CUDA device is present"): when it returns a reason, the
// program prints it and exits with 77, which ctest reports as skipped.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

__attribute__((weak)) const char* inlay_test_skip_reason() { return nullptr; }

int main(int argc, char** argv) {
    if (const char* why = inlay_test_skip_reason()) {
        std::printf("SKIPPED: %s\n", why);
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
