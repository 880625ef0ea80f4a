# Cross-compiling for 64-bit Arm Linux with Debian's g++-aarch64-linux-gnu:
#   cmake -S runtime -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=<this file>
# builds cgc's runtime for the aarch64 target (cgc/targets.def), and a
# project using find_package(cgc) and cgc_add_graph(... TARGET aarch64)
# configured with this file builds its models for it. The host's cgc is
# found through CMAKE_PREFIX_PATH, so packages may come from outside the
# target's root; libraries and headers only from inside it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# Run the target's test programs under qemu-user (qemu-aarch64 -L finds the
# target's dynamic loader and libraries there).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
