// The coordinator's advertised address (core/host.h ChooseAdvertiseAddress): explicit address,
// named interface, MPI's TCP selection, default route, first routable interface, host name.
#include "core/host.h"

#include <gtest/gtest.h>

namespace troupe {
namespace {

InterfaceAddress Iface(std::string name, std::string ip, bool up = true, bool loopback = false) {
  return InterfaceAddress{std::move(name), std::move(ip), up, loopback};
}

// A cluster node: loopback, a docker bridge (first in the kernel's order), the cluster NIC
// holding the default route, a down NIC and a link-local one.
std::vector<InterfaceAddress> Node() {
  return {Iface("lo", "127.0.0.1", true, true), Iface("docker0", "172.17.0.1"),
          Iface("eth0", "10.77.0.3"), Iface("ib0", "192.168.5.3", false),
          Iface("usb0", "169.254.3.1")};
}

std::string Host(const AdvertiseRequest& r, const std::vector<InterfaceAddress>& ifaces,
                 const std::string& route = "eth0") {
  auto c = ChooseAdvertiseAddress(r, ifaces, route, "node3");
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? c->host : "";
}

TEST(AdvertiseAddressTest, ExplicitAddressWins) {
  AdvertiseRequest r;
  r.address = "node3.cluster";
  r.mpi_tcp_if_include = "docker0";
  EXPECT_EQ(Host(r, Node()), "node3.cluster");
}

TEST(AdvertiseAddressTest, NamedInterfaceGivesItsIpv4) {
  AdvertiseRequest r;
  r.interface = "docker0";
  EXPECT_EQ(Host(r, Node()), "172.17.0.1");
  auto c = ChooseAdvertiseAddress(r, Node(), "eth0", "node3");
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->reason.find("control.advertise_interface"), std::string::npos) << c->reason;
}

TEST(AdvertiseAddressTest, MissingOrDownInterfaceIsAnErrorListingTheOthers) {
  for (const char* name : {"eth9", "ib0"}) {
    AdvertiseRequest r;
    r.interface = name;
    auto c = ChooseAdvertiseAddress(r, Node(), "eth0", "node3");
    ASSERT_FALSE(c.ok()) << name;
    EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
    EXPECT_NE(c.status().message().find(name), std::string::npos) << c.status();
    EXPECT_NE(c.status().message().find("eth0 10.77.0.3"), std::string::npos) << c.status();
    EXPECT_NE(c.status().message().find("ib0 192.168.5.3 (down)"), std::string::npos) << c.status();
  }
}

TEST(AdvertiseAddressTest, MpiTcpSelectionByNameOrCidr) {
  AdvertiseRequest r;
  r.mpi_tcp_if_include = "docker0";
  EXPECT_EQ(Host(r, Node()), "172.17.0.1");
  r.mpi_tcp_if_include = "192.168.0.0/16,172.16.0.0/12";  // ib0 is down: skipped
  EXPECT_EQ(Host(r, Node()), "172.17.0.1");
  r.mpi_tcp_if_include = "lo";  // loopback reaches no other host: fall through
  EXPECT_EQ(Host(r, Node()), "10.77.0.3");
}

TEST(AdvertiseAddressTest, DefaultRouteThenFirstRoutableThenHostname) {
  EXPECT_EQ(Host({}, Node(), "eth0"), "10.77.0.3");
  // No default route (an emulated host in a network namespace): the first routable NIC.
  EXPECT_EQ(Host({}, Node(), ""), "172.17.0.1");
  EXPECT_EQ(Host({}, {Iface("lo", "127.0.0.1", true, true), Iface("eth0", "10.77.0.2")}, ""),
            "10.77.0.2");
  // Only loopback, down and link-local addresses: the host name, said so.
  auto c = ChooseAdvertiseAddress({},
                                  {Iface("lo", "127.0.0.1", true, true),
                                   Iface("eth0", "10.0.0.1", false), Iface("x", "169.254.1.1")},
                                  "eth0", "node3");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "node3");
  EXPECT_NE(c->reason.find("host name"), std::string::npos) << c->reason;
}

TEST(AdvertiseAddressTest, ThisMachineAdvertisesSomething) {
  auto c = ChooseAdvertiseAddress(AdvertiseRequest{});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->host.empty());
  for (const auto& a : Ipv4Interfaces()) EXPECT_FALSE(a.ipv4.empty()) << a.interface;
}

}  // namespace
}  // namespace troupe
