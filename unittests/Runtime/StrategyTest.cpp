//===- StrategyTest.cpp - slinrt_prefer_per_part ----------------*- C++ -*-===//
//
// The run-time choice between one GEMM per part and a copy of the parts: the
// CPU context's automatic threshold, a threshold set on the context, the
// error for an invalid one, and one part (nothing to choose).
//
//===----------------------------------------------------------------------===//

#include "splitlinear/Runtime/Runtime.h"

#include <gtest/gtest.h>

namespace {

class StrategyTest : public ::testing::Test {
protected:
  void SetUp() override { ctx = slinrt_context_create_cpu(); }
  void TearDown() override { slinrt_context_destroy(ctx); }
  slinrt_context *ctx = nullptr;
};

TEST_F(StrategyTest, CPUAutomaticChoiceIsAtMost64Rows) {
  EXPECT_EQ(slinrt_prefer_per_part(ctx, 1, 3, 1 << 20), 1);
  EXPECT_EQ(slinrt_prefer_per_part(ctx, 64, 3, 1 << 20), 1);
  EXPECT_EQ(slinrt_prefer_per_part(ctx, 65, 3, 1 << 20), 0);
}

TEST_F(StrategyTest, ThresholdSetOnTheContext) {
  slinrt_context_set_per_part_max_rows(ctx, 6);
  EXPECT_EQ(slinrt_prefer_per_part(ctx, 6, 2, 64), 1);
  EXPECT_EQ(slinrt_prefer_per_part(ctx, 7, 2, 64), 0);
  slinrt_context_set_per_part_max_rows(ctx, 0); // the per-part path off
  EXPECT_EQ(slinrt_prefer_per_part(ctx, 0, 2, 64), 0);
  EXPECT_EQ(slinrt_prefer_per_part(ctx, 1, 2, 64), 0);
  slinrt_context_set_per_part_max_rows(ctx, -1); // back to automatic
  EXPECT_EQ(slinrt_prefer_per_part(ctx, 64, 2, 64), 1);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_OK);
}

TEST_F(StrategyTest, OnePartHasNothingToChoose) {
  EXPECT_EQ(slinrt_prefer_per_part(ctx, 1, 1, 64), 0);
}

TEST_F(StrategyTest, InvalidThresholdIsAnError) {
  slinrt_context_set_per_part_max_rows(ctx, -2);
  EXPECT_EQ(slinrt_context_status(ctx), SLINRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(slinrt_context_error(ctx))
                .find("rows must be >= 0, or -1 for the cost model, got -2"),
            std::string::npos);
  // A context holding an error answers "copy".
  EXPECT_EQ(slinrt_prefer_per_part(ctx, 1, 2, 64), 0);
}

} // namespace
