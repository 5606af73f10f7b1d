#include "launch/environment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace troupe::launch {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(EnvironmentTest, SingleProcess) {
  auto e = *DetectEnvironment({}, Env({}));
  EXPECT_EQ(e.launcher, "single process");
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.world_size, 1);
}

TEST(EnvironmentTest, MpirunInsideSlurmUsesMpiRanks) {
  // Under mpirun inside sbatch every rank inherits SLURM_PROCID=0.
  auto e = *DetectEnvironment({}, Env({{"OMPI_COMM_WORLD_RANK", "3"},
                                       {"OMPI_COMM_WORLD_SIZE", "4"},
                                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                       {"SLURM_PROCID", "0"},
                                       {"SLURM_NTASKS", "4"},
                                       {"SLURM_JOB_NODELIST", "n[1-2]"}}));
  EXPECT_EQ(e.launcher, "mpirun");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_TRUE(e.under_mpi);
}

TEST(EnvironmentTest, SrunPmixHasNoOmpiVariables) {
  auto e = *DetectEnvironment({}, Env({{"PMIX_RANK", "1"},
                                       {"SLURM_PROCID", "1"},
                                       {"SLURM_NTASKS", "2"},
                                       {"SLURM_LOCALID", "1"}}));
  EXPECT_EQ(e.launcher, "srun (pmix)");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 2);
}

// Under Slurm the coordinator's address is rank 0's choice shared over MPI, never the node
// list's first name (which other nodes may not resolve).
TEST(EnvironmentTest, SrunPmixLeavesCoordinatorToRank0) {
  auto e = *DetectEnvironment({}, Env({{"PMIX_RANK", "3"},
                                       {"SLURM_PROCID", "3"},
                                       {"SLURM_NTASKS", "8"},
                                       {"SLURM_STEP_ID", "0"},
                                       {"SLURM_JOB_ID", "41"},
                                       {"SLURM_JOB_NODELIST", "node[0-3]"}}));
  EXPECT_EQ(e.launcher, "srun (pmix)");
  EXPECT_EQ(e.coordinator, "");
  EXPECT_NE(std::find(e.reasons.begin(), e.reasons.end(),
                      "coordinator address shared by rank 0 over MPI broadcast"),
            e.reasons.end());
}

TEST(EnvironmentTest, MpirunInsideSlurmLeavesCoordinatorToRank0) {
  auto e = *DetectEnvironment({}, Env({{"OMPI_COMM_WORLD_RANK", "1"},
                                       {"OMPI_COMM_WORLD_SIZE", "2"},
                                       {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"},
                                       {"SLURM_PROCID", "0"},
                                       {"SLURM_NTASKS", "2"},
                                       {"SLURM_JOB_ID", "41"},
                                       {"SLURM_JOB_NODELIST", "gpu[07-08]"}}));
  EXPECT_EQ(e.coordinator, "");
}

TEST(EnvironmentTest, PlainSrunWithSeveralTasksNamesTheFix) {
  auto r = DetectEnvironment({}, Env({{"SLURM_PROCID", "1"},
                                      {"SLURM_NTASKS", "2"},
                                      {"SLURM_STEP_ID", "0"},
                                      {"SLURM_JOB_ID", "41"},
                                      {"SLURM_JOB_NODELIST", "gpu[07-08]"}}));
  ASSERT_FALSE(r.ok());
  const std::string m(r.status().message());
  EXPECT_NE(m.find("srun started 2 tasks without MPI"), std::string::npos) << m;
  EXPECT_NE(m.find("--mpi=pmix"), std::string::npos) << m;
  EXPECT_NE(m.find("control.advertise_address"), std::string::npos) << m;
  EXPECT_NE(m.find("control.advertise_interface"), std::string::npos) << m;
  EXPECT_EQ(m.find("gpu07"), std::string::npos) << m;
}

TEST(EnvironmentTest, PlainSrunSingleTaskNeedsNoCoordinator) {
  auto e = *DetectEnvironment({}, Env({{"SLURM_PROCID", "0"},
                                       {"SLURM_NTASKS", "1"},
                                       {"SLURM_STEP_ID", "0"},
                                       {"SLURM_JOB_ID", "41"},
                                       {"SLURM_JOB_NODELIST", "gpu07"}}));
  EXPECT_EQ(e.launcher, "slurm");
  EXPECT_EQ(e.coordinator, "");
}

TEST(EnvironmentTest, TroupeCoordinatorStillOverridesUnderSlurm) {
  auto e = *DetectEnvironment({}, Env({{"PMIX_RANK", "0"},
                                       {"SLURM_NTASKS", "2"},
                                       {"SLURM_JOB_NODELIST", "gpu[07-08]"},
                                       {"TROUPE_COORDINATOR", "10.0.0.7:29500"}}));
  EXPECT_EQ(e.coordinator, "10.0.0.7:29500");
}

TEST(EnvironmentTest, FlagsThatDisagreeAreReported) {
  LaunchFlags f;
  f.world_size = 4;
  auto r = DetectEnvironment(f, Env({{"OMPI_COMM_WORLD_RANK", "0"},
                                     {"OMPI_COMM_WORLD_SIZE", "2"},
                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--world-size=4 disagrees with mpirun"), std::string::npos);
}

TEST(EnvironmentTest, FlagsAloneNeedCoordinator) {
  LaunchFlags f;
  f.rank = 1;
  f.world_size = 2;
  EXPECT_NE(DetectEnvironment(f, Env({})).status().message().find("--coordinator"),
            std::string::npos);
  f.coordinator = "10.0.0.1:7000";
  auto e = *DetectEnvironment(f, Env({}));
  EXPECT_EQ(e.launcher, "flags");
  EXPECT_EQ(e.rank, 1);
  f.coordinator = "10.0.0.1";
  EXPECT_FALSE(DetectEnvironment(f, Env({})).ok());
}

}  // namespace
}  // namespace troupe::launch
