#!/usr/bin/env bash
# Packs what the GPU machine cannot build (it has no MLIR and no package
# registry) into .carry/gpu-bundle.tar.xz: the MLIR-linked libraries, the op
# library and the runtime unit tests (.carry/gpu-bundle.tar.xz), and
# libLLVM.so.22.1 with the shared libraries it needs beyond glibc
# (.carry/gpu-deps.tar.xz). Run after scripts/build.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
STAGE=$(mktemp -d)
mkdir -p "$STAGE/lib" "$STAGE/bin" .carry
cp "$BUILD_DIR"/lib/libsplitlinear_c.so "$BUILD_DIR"/lib/libsplitlinear_runtime.so \
   "$BUILD_DIR"/lib/libsplitlinear_torch.so "$STAGE/lib/"
cp "$BUILD_DIR"/bin/splitlinear-capi-test "$STAGE/bin/"
cp "$BUILD_DIR"/bin/SplitLinearRuntimeTests "$STAGE/bin/"
strip --strip-unneeded "$STAGE"/lib/*.so "$STAGE"/bin/* 2>/dev/null || true
tar -C "$STAGE" -cf - . | xz -6 -T2 > .carry/gpu-bundle.tar.xz
rm -rf "$STAGE"
# libLLVM and the shared libraries it needs beyond glibc (the GPU image may
# lack them): packed once, in a tarball of their own (xz of libLLVM takes
# minutes on two cores); removed to repack after an LLVM upgrade.
if [ ! -s .carry/gpu-deps.tar.xz ]; then
  DEPS=$(mktemp -d)
  mkdir -p "$DEPS/deps"
  cp -L /usr/lib/llvm-22/lib/libLLVM.so.22.1 "$DEPS/deps/"
  for lib in $(ldd /usr/lib/llvm-22/lib/libLLVM.so.22.1 | awk '/=>/ {print $3}'); do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libstdc++*|libgcc_s*|ld-linux*|libz.so*|libpthread*|libdl*) ;;
      *) cp -L "$lib" "$DEPS/deps/" ;;
    esac
  done
  tar -C "$DEPS" -cf - . | xz -6 -T2 > .carry/gpu-deps.tar.xz
  rm -rf "$DEPS"
fi
ls -la .carry/gpu-bundle.tar.xz .carry/gpu-deps.tar.xz
