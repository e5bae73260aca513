#!/usr/bin/env bash
# Packs what the GPU machine cannot build (it has no MLIR and no package
# registry) into .carry/gpu-bundle.tar.xz: the MLIR-linked libraries, the op
# library, the runtime unit tests, and libLLVM.so.22.1 with the shared
# libraries it needs beyond glibc. Run after scripts/build.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
STAGE=$(mktemp -d)
mkdir -p "$STAGE/lib" "$STAGE/deps" "$STAGE/bin" .carry
cp "$BUILD_DIR"/lib/libsplitlinear_c.so "$BUILD_DIR"/lib/libsplitlinear_runtime.so \
   "$BUILD_DIR"/lib/libsplitlinear_torch.so "$STAGE/lib/"
cp "$BUILD_DIR"/bin/splitlinear-capi-test "$STAGE/bin/"
cp "$BUILD_DIR"/bin/SplitLinearRuntimeTests "$STAGE/bin/"
cp -L /usr/lib/llvm-22/lib/libLLVM.so.22.1 "$STAGE/deps/"
# Non-glibc dependencies of libLLVM (the GPU image may lack them).
for lib in $(ldd /usr/lib/llvm-22/lib/libLLVM.so.22.1 | awk '/=>/ {print $3}'); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++*|libgcc_s*|ld-linux*|libz.so*|libpthread*|libdl*) ;;
    *) cp -L "$lib" "$STAGE/deps/" ;;
  esac
done
strip --strip-unneeded "$STAGE"/lib/*.so "$STAGE"/bin/* 2>/dev/null || true
tar -C "$STAGE" -cf - . | xz -6 -T2 > .carry/gpu-bundle.tar.xz
rm -rf "$STAGE"
ls -la .carry/gpu-bundle.tar.xz
