#include <cstdio>
#include "inlay/inlay.h"
int main() { std::printf("inlay %s\n", inlay_version()); return 0; }
