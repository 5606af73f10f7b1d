#include "core/host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "core/env.h"

namespace troupe {
namespace {

// The dotted quad as a host-order number; nullopt when it is not one.
std::optional<uint32_t> ParseIpv4(const std::string& text) {
  in_addr a{};
  if (inet_pton(AF_INET, text.c_str(), &a) != 1) return std::nullopt;
  return ntohl(a.s_addr);
}

// Whether `ipv4` is in "a.b.c.d/n"; false for anything that is not such a CIDR.
bool InCidr(const std::string& ipv4, const std::string& cidr) {
  const size_t slash = cidr.find('/');
  if (slash == std::string::npos) return false;
  auto net = ParseIpv4(cidr.substr(0, slash));
  auto ip = ParseIpv4(ipv4);
  int bits = -1;
  std::istringstream(cidr.substr(slash + 1)) >> bits;
  if (!net || !ip || bits < 0 || bits > 32) return false;
  const uint32_t mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
  return (*net & mask) == (*ip & mask);
}

// Up, not loopback, not link-local (169.254/16): an address other hosts can route to.
bool Routable(const InterfaceAddress& a) {
  return a.up && !a.loopback && !InCidr(a.ipv4, "169.254.0.0/16");
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string ListInterfaces(const std::vector<InterfaceAddress>& interfaces) {
  std::string out;
  for (const auto& a : interfaces) {
    out += (out.empty() ? "" : ", ") + a.interface + " " + a.ipv4 + (a.up ? "" : " (down)");
  }
  return out.empty() ? "none with IPv4" : out;
}

Result<AdvertiseChoice> NamedInterface(const std::string& name,
                                       const std::vector<InterfaceAddress>& interfaces) {
  for (const auto& a : interfaces) {
    if (a.interface == name && a.up) {
      return AdvertiseChoice{a.ipv4, "IPv4 of " + name + " (control.advertise_interface)"};
    }
  }
  return NotFoundError("control.advertise_interface = \"" + name +
                       "\": no such interface that is up with an IPv4 address on " + Hostname() +
                       " (it has: " + ListInterfaces(interfaces) +
                       "); name one of these or set control.advertise_address");
}

// The first routable address MPI's TCP selection includes (names or CIDRs).
std::optional<AdvertiseChoice> MpiSelection(const std::string& include,
                                            const std::vector<InterfaceAddress>& interfaces) {
  for (const std::string& item : SplitCommas(include)) {
    for (const auto& a : interfaces) {
      if (Routable(a) && (a.interface == item || InCidr(a.ipv4, item))) {
        return AdvertiseChoice{a.ipv4, "IPv4 of " + a.interface +
                                           ", which MPI's TCP transport uses (btl_tcp_if_include)"};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::string Hostname() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof(buf) - 1) == 0 ? buf : "localhost";
}

std::vector<InterfaceAddress> Ipv4Interfaces() {
  std::vector<InterfaceAddress> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, text, sizeof(text)) == nullptr) continue;
    InterfaceAddress a;
    a.interface = i->ifa_name;
    a.ipv4 = text;
    a.up = (i->ifa_flags & IFF_UP) != 0 && (i->ifa_flags & IFF_RUNNING) != 0;
    a.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    out.push_back(std::move(a));
  }
  freeifaddrs(list);
  return out;
}

std::string DefaultRouteInterface() {
  std::istringstream routes(ReadFileToString("/proc/net/route").value_or(""));
  std::string line;
  std::getline(routes, line);  // header
  while (std::getline(routes, line)) {
    std::istringstream fields(line);
    std::string iface, destination, gateway, flags, refcnt, use, metric, mask;
    fields >> iface >> destination >> gateway >> flags >> refcnt >> use >> metric >> mask;
    if (destination == "00000000" && mask == "00000000") return iface;
  }
  return "";
}

Result<AdvertiseChoice> ChooseAdvertiseAddress(const AdvertiseRequest& request,
                                               const std::vector<InterfaceAddress>& interfaces,
                                               const std::string& default_route_interface,
                                               const std::string& hostname) {
  if (!request.address.empty()) {
    return AdvertiseChoice{request.address, "control.advertise_address"};
  }
  if (!request.interface.empty()) return NamedInterface(request.interface, interfaces);
  if (auto mpi = MpiSelection(request.mpi_tcp_if_include, interfaces)) return *mpi;
  for (const auto& a : interfaces) {
    if (Routable(a) && a.interface == default_route_interface) {
      return AdvertiseChoice{a.ipv4, "IPv4 of " + a.interface + ", the default route's interface"};
    }
  }
  for (const auto& a : interfaces) {
    if (Routable(a)) {
      return AdvertiseChoice{
          a.ipv4, "IPv4 of " + a.interface + ", the first interface up that is not loopback"};
    }
  }
  return AdvertiseChoice{hostname, "the host name: no interface other than loopback has IPv4"};
}

Result<AdvertiseChoice> ChooseAdvertiseAddress(const AdvertiseRequest& request) {
  return ChooseAdvertiseAddress(request, Ipv4Interfaces(), DefaultRouteInterface(), Hostname());
}

}  // namespace troupe
