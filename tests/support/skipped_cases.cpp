// The cases of this program that skipped for a missing input (skip_missing appends,
// catch_main prints them). A file of its own: the stand-alone kernel tests, which have
// no support library, compile it with catch_main.cpp.
#include <string>
#include <vector>

namespace inlay::test {

std::vector<std::string>& skipped_cases() {
    static std::vector<std::string> list;
    return list;
}

}  // namespace inlay::test
