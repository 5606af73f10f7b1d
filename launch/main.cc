// The `troupe` binary: the command line of launch/main.h with the zoo's models.
#include "launch/main.h"

int main(int argc, char** argv) { return troupe::launch::Main(argc, argv); }
