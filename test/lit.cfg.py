# -*- Python -*-
"""lit configuration of the splitlinear regression tests."""

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "SPLITLINEAR"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".c"]
config.excludes = ["Inputs", "CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.splitlinear_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%splitlinear_libs", config.splitlinear_lib_dir))
config.substitutions.append(("%mlir_lib_dir", config.mlir_lib_dir))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
# `not` at the start of a RUN line is found through PATH, not substituted.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.splitlinear_tools_dir, config.llvm_tools_dir]
# `-Dsplitlinear_opt=PATH` runs the tests with another driver: the installed
# wheel's console script (scripts/test.sh) instead of the build tree's.
opt = lit_config.params.get("splitlinear_opt")
tools = [
    ToolSubst("splitlinear-opt", command=opt) if opt else "splitlinear-opt",
    "splitlinear-capi-test",
    ToolSubst("mlir-runner", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

if config.enable_cuda:
    config.available_features.add("cuda-toolkit")
