#===- cmake/StaticLLVM.cmake - link LLVM statically ---------------------===#
#
# One linking policy for LLVM, chosen here and nowhere else:
# SPLITLINEAR_LLVM_LIBS is what the project's targets name where they need
# LLVM.
#
# With SPLITLINEAR_STATIC_LLVM (the default), LLVM's PIC static archives from
# Debian's llvm-22-dev are linked into each artifact, as triton, torch-mlir and
# IREE do: nothing built here has libLLVM.so in NEEDED, so the libraries run
# where no LLVM package is installed and ship in a wheel. Debian builds LLVM
# with LLVM_LINK_LLVM_DYLIB, so every imported MLIR target names the shared
# `LLVM` in its link interface; this module rewrites those interfaces to the
# static component archives. Archives are pulled object by object, so naming
# every component costs link time only, not size (a static libsplitlinear_c.so
# measured the same with all components or only the used ones).
#
# Without it, the shared libLLVM.so.22.1 from /usr/lib/llvm-22 (faster links
# for development; the libraries then need that package at run time).
#
# Needs: find_package(MLIR) done and AddLLVM included.
#
#===----------------------------------------------------------------------===#

option(SPLITLINEAR_STATIC_LLVM
  "Link LLVM's static archives into each artifact (no libLLVM.so at run time)" ON)

# MLIR's ExecutionEngine archive, without its imported target, which names
# libMLIR.so (a second copy of MLIR in the process aborts at start with
# "Option ... registered more than once"). Its LLVM dependencies follow it on
# the link line, as static archives must.
function(splitlinear_add_execution_engine)
  add_library(SplitLinearMLIRExecutionEngine STATIC IMPORTED GLOBAL)
  set_target_properties(SplitLinearMLIRExecutionEngine PROPERTIES
    IMPORTED_LOCATION "${MLIR_INSTALL_PREFIX}/lib/libMLIRExecutionEngine.a"
    INTERFACE_LINK_LIBRARIES "MLIRExecutionEngineUtils;${SPLITLINEAR_LLVM_LIBS}")
endfunction()

if(NOT SPLITLINEAR_STATIC_LLVM)
  set(SPLITLINEAR_LLVM_LIBS LLVM)
  splitlinear_add_execution_engine()
  return()
endif()

# Every LLVM component archive the package ships, minus tools' libraries
# (BOLT, exegesis, Polly, the LTO/Remarks shared objects and the dylib) and
# the two that need libcurl and libedit development packages.
set(SPLITLINEAR_LLVM_LIBS)
foreach(lib ${LLVM_AVAILABLE_LIBS})
  if(TARGET ${lib} AND lib MATCHES "^LLVM" AND
     NOT lib MATCHES "^LLVM(BOLT|Exegesis|OptDriver|Debuginfod|LineEditor|$)")
    get_target_property(type ${lib} TYPE)
    get_target_property(deps ${lib} INTERFACE_LINK_LIBRARIES)
    # Tools' libraries (LLVMCFIVerify, LLVMDiff) link the dylib themselves.
    if(type STREQUAL "STATIC_LIBRARY" AND NOT "LLVM" IN_LIST deps)
      list(APPEND SPLITLINEAR_LLVM_LIBS ${lib})
    endif()
  endif()
endforeach()

# LLVMSupport names libz3 for the optional Z3 constraint solver, which nothing
# here uses; left in, auditwheel would bundle its 20 MB. Its zstd target exists
# only with libzstd-dev: the runtime library stands in for it.
get_target_property(support_libs LLVMSupport INTERFACE_LINK_LIBRARIES)
list(FILTER support_libs EXCLUDE REGEX "libz3")
list(TRANSFORM support_libs REPLACE "^zstd::libzstd_shared$" "-l:libzstd.so.1")
set_target_properties(LLVMSupport PROPERTIES
  INTERFACE_LINK_LIBRARIES "${support_libs}")
# LLVMExtensions names Polly, whose archive Debian does not ship (nothing
# here registers Polly's passes).
set_target_properties(LLVMExtensions PROPERTIES INTERFACE_LINK_LIBRARIES LLVMSupport)

# The imported MLIR archives: `LLVM` (the dylib) becomes the static list.
foreach(target ${MLIR_EXPORTED_TARGETS})
  if(NOT TARGET ${target})
    continue()
  endif()
  get_target_property(type ${target} TYPE)
  if(NOT type STREQUAL "STATIC_LIBRARY")
    continue()
  endif()
  get_target_property(libs ${target} INTERFACE_LINK_LIBRARIES)
  if(libs AND "LLVM" IN_LIST libs)
    list(REMOVE_ITEM libs LLVM)
    list(APPEND libs ${SPLITLINEAR_LLVM_LIBS})
    set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${libs}")
  endif()
endforeach()

splitlinear_add_execution_engine()

# add_llvm_executable / llvm_add_library link LINK_COMPONENTS through the
# dylib while this is on.
set(LLVM_LINK_LLVM_DYLIB OFF)
# Only what is referenced lands in NEEDED (zstd, z3 and friends otherwise).
add_link_options("LINKER:--as-needed")
message(STATUS "splitlinear: LLVM linked statically "
               "(${CMAKE_CURRENT_LIST_FILE}; -DSPLITLINEAR_STATIC_LLVM=OFF for libLLVM.so)")
