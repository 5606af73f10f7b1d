#include "core/cpu_budget.h"

#include <gtest/gtest.h>

namespace troupe {
namespace {

CpuBudget Budget(int online, int affinity, double quota = 0) {
  CpuBudget b;
  b.online = online;
  b.affinity = affinity;
  b.quota = quota;
  return b;
}

TEST(CpuBudgetTest, ReadsAPlausibleBudget) {
  CpuBudget b = ReadCpuBudget();
  EXPECT_GE(b.online, 1);
  EXPECT_GE(b.affinity, 1);
  EXPECT_LE(b.affinity, b.online);
  EXPECT_GE(b.quota, 0);
}

TEST(CpuBudgetTest, OneProcessTakesEveryUsableCore) {
  IntraOpChoice c = ChooseIntraOpThreads(Budget(16, 16), 1, 1, 0, 0);
  EXPECT_EQ(c.threads, 16);
  EXPECT_NE(c.why.find("16 cores"), std::string::npos) << c.why;
}

TEST(CpuBudgetTest, UnboundProcessesOfAHostShareItsCores) {
  IntraOpChoice c = ChooseIntraOpThreads(Budget(16, 16), 4, 1, 0, 0);
  EXPECT_EQ(c.threads, 4);
  EXPECT_NE(c.why.find("4 processes"), std::string::npos) << c.why;
  EXPECT_EQ(ChooseIntraOpThreads(Budget(2, 2), 4, 1, 0, 0).threads, 1);  // never below one
}

TEST(CpuBudgetTest, ABindingIsAlreadyTheShare) {
  // mpirun binds 2 ranks to a core each: the mask is the share, not to be divided again.
  EXPECT_EQ(ChooseIntraOpThreads(Budget(2, 1), 2, 1, 0, 0).threads, 1);
  EXPECT_EQ(ChooseIntraOpThreads(Budget(16, 8), 2, 1, 0, 0).threads, 8);
}

TEST(CpuBudgetTest, AProcesssReplicasKeepCoresOfTheirOwn) {
  // Two replicas on two cores: each computes on its own thread; a pool worker would be a third.
  IntraOpChoice c = ChooseIntraOpThreads(Budget(2, 2), 1, 2, 0, 0);
  EXPECT_EQ(c.threads, 1);
  EXPECT_NE(c.why.find("1 other replica"), std::string::npos) << c.why;
  EXPECT_EQ(ChooseIntraOpThreads(Budget(16, 16), 1, 4, 0, 0).threads, 13);
  EXPECT_EQ(ChooseIntraOpThreads(Budget(16, 16), 2, 4, 0, 0).threads, 5);
  EXPECT_EQ(ChooseIntraOpThreads(Budget(4, 4), 1, 8, 0, 0).threads, 1);
}

TEST(CpuBudgetTest, ACgroupQuotaCaps) {
  IntraOpChoice c = ChooseIntraOpThreads(Budget(64, 64, 3.5), 1, 1, 0, 0);
  EXPECT_EQ(c.threads, 4);
  EXPECT_NE(c.why.find("quota"), std::string::npos) << c.why;
  EXPECT_EQ(ChooseIntraOpThreads(Budget(64, 64, 8), 2, 1, 0, 0).threads, 4);
}

TEST(CpuBudgetTest, ConfigWinsOverEnvironmentOverAutomatic) {
  EXPECT_EQ(ChooseIntraOpThreads(Budget(16, 16), 1, 4, 3, 5).threads, 3);
  EXPECT_EQ(ChooseIntraOpThreads(Budget(16, 16), 1, 4, 0, 5).threads, 5);
  EXPECT_EQ(ChooseIntraOpThreads(Budget(16, 16), 1, 4, 0, 5).why, "TROUPE_NUM_THREADS");
}

}  // namespace
}  // namespace troupe
