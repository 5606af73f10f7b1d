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
  EXPECT_EQ(ChooseIntraOpThreads(Budget(16, 16), 1, 4, 0, 0).threads, 12);
  EXPECT_EQ(ChooseIntraOpThreads(Budget(16, 16), 2, 4, 0, 0).threads, 4);
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

TEST(CpuBudgetTest, AutoReplicasAreOnePerCoreUpToTwoThenOnePerTwoCores) {
  ReplicaChoice c = ChooseReplicasPerProcess(Budget(16, 16), 1, 1, 128);
  EXPECT_EQ(c.replicas, 8);
  EXPECT_NE(c.why.find("8 replicas of 16 examples"), std::string::npos) << c.why;
  EXPECT_EQ(ChooseReplicasPerProcess(Budget(1, 1), 1, 1, 128).replicas, 1);
  EXPECT_EQ(ChooseReplicasPerProcess(Budget(2, 2), 1, 1, 128).replicas, 2);
  EXPECT_EQ(ChooseReplicasPerProcess(Budget(3, 3), 1, 1, 128).replicas, 2);
  EXPECT_EQ(ChooseReplicasPerProcess(Budget(4, 4), 1, 1, 128).replicas, 2);
  EXPECT_EQ(ChooseReplicasPerProcess(Budget(2, 2), 2, 2, 128).replicas, 1);  // 1 core each
  // The host's processes share its cores; a quota caps them.
  EXPECT_EQ(ChooseReplicasPerProcess(Budget(16, 16), 2, 2, 128).replicas, 4);
  EXPECT_EQ(ChooseReplicasPerProcess(Budget(64, 64, 6), 1, 1, 128).replicas, 2);  // not 3: 128 % 3
}

TEST(CpuBudgetTest, AutoReplicasDivideTheBatchIntoPiecesOfTwoOrMore) {
  // 12 = 6 x 2: not 8 (12 % 8), and per-replica batches of at least 2.
  EXPECT_EQ(ChooseReplicasPerProcess(Budget(16, 16), 1, 1, 12).replicas, 6);
  EXPECT_EQ(ChooseReplicasPerProcess(Budget(16, 16), 1, 1, 4).replicas, 2);
  EXPECT_EQ(ChooseReplicasPerProcess(Budget(16, 16), 1, 1, 1).replicas, 1);
  EXPECT_EQ(ChooseReplicasPerProcess(Budget(16, 16), 1, 1, 97).replicas, 1);  // a prime
  // The job's replicas are processes x this: 2 processes, batch 24 -> 2 x 6 replicas of 2.
  EXPECT_EQ(ChooseReplicasPerProcess(Budget(32, 32), 2, 2, 24).replicas, 6);
}

}  // namespace
}  // namespace troupe
