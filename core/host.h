// Facts about the machine this process runs on, shared by the control plane and the launcher,
// and the choice of the address other hosts use to reach a service on this one.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace troupe {

// This machine's host name (gethostname), or "localhost" when it cannot be read.
std::string Hostname();

// One IPv4 address of a network interface.
struct InterfaceAddress {
  std::string interface;  // "eth0"
  std::string ipv4;       // dotted quad, "10.77.0.1"
  bool up = false;        // IFF_UP and IFF_RUNNING
  bool loopback = false;  // IFF_LOOPBACK
};

// This machine's IPv4 interface addresses (getifaddrs), in the kernel's order; empty when they
// cannot be read.
std::vector<InterfaceAddress> Ipv4Interfaces();

// The interface holding the IPv4 default route (/proc/net/route), or "" when there is none.
std::string DefaultRouteInterface();

// What the user asked to advertise (control.advertise_address / control.advertise_interface)
// and what the launcher says about the network its processes use.
struct AdvertiseRequest {
  std::string address;    // advertise exactly this (an IP or a name every host resolves)
  std::string interface;  // advertise this interface's IPv4
  // OpenMPI's TCP transport selection (OMPI_MCA_btl_tcp_if_include): interface names or IPv4
  // CIDRs, comma-separated; "" when not set.
  std::string mpi_tcp_if_include;
};

struct AdvertiseChoice {
  std::string host;    // what peers connect to
  std::string reason;  // why, for logs: "IPv4 of eth0, the default route's interface"
};

// Picks the host others reach this machine by. In order: the explicit address; the named
// interface's IPv4 (NotFound naming the interfaces there are when it is absent, down or has no
// IPv4); an IPv4 that MPI's TCP selection includes; the default route's interface's IPv4; the
// first up, non-loopback, non-link-local IPv4; the host name only when no such IPv4 exists.
// Pure: the machine's facts come as arguments.
Result<AdvertiseChoice> ChooseAdvertiseAddress(const AdvertiseRequest& request,
                                               const std::vector<InterfaceAddress>& interfaces,
                                               const std::string& default_route_interface,
                                               const std::string& hostname);

// ChooseAdvertiseAddress with this machine's interfaces, default route and host name.
Result<AdvertiseChoice> ChooseAdvertiseAddress(const AdvertiseRequest& request);

}  // namespace troupe
