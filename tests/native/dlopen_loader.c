/* Loads a JNI library as a JVM of its platform would: dlopen with every symbol bound now
 * (RTLD_NOW: a symbol its libc lacks fails here), then looks up the JNI entry points named on the
 * command line. tests/native/test_native_loading.py builds it with zig for each platform and runs
 * it under that platform's own loader (aarch64 under qemu-user).
 *
 *   dlopen_loader LIBRARY [SYMBOL...]   exit 0: loaded, every symbol found; 2: dlopen failed;
 *                                       3: a symbol is missing */
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
  int missing = 0;
  for (int i = 2; i < argc; i++) if (!dlsym(h, argv[i])) { fprintf(stderr, "missing %s\n", argv[i]); missing++; }
  printf("loaded %s, %d symbols resolved\n", argv[1], argc - 2 - missing);
  return missing ? 3 : 0;
}
