#include "listener.h"

#include "absl/strings/str_cat.h"
#include "grpcpp/security/server_credentials.h"

namespace cake::server {

absl::StatusOr<ListenerPlan> PlanListener(const DaemonConfig& cfg) {
  ListenerPlan plan;
  absl::StatusOr<ListenAddress> address = ParseListenAddress(cfg.listen);
  if (!address.ok()) return address.status();
  plan.address = *address;
  if (absl::Status s = CheckSocketFolder(plan.address); !s.ok()) return s;
  const bool tls = !cfg.tls_cert.empty() || !cfg.tls_key.empty() || !cfg.tls_client_ca.empty();
  if (plan.address.kind == ListenAddress::Kind::kUnix) {
    if (tls)
      return absl::FailedPreconditionError(absl::StrCat(
          "tls_cert, tls_key and tls_client_ca apply to a TCP listen address, not unix:",
          plan.address.path, " (the socket's file mode guards it)"));
    plan.credentials = grpc::InsecureServerCredentials();
    plan.transport = "unix socket";
    return plan;
  }
  if (tls) {
    absl::StatusOr<grpc::SslServerCredentialsOptions> options =
        LoadServerTls({cfg.tls_cert, cfg.tls_key, cfg.tls_client_ca});
    if (!options.ok()) return options.status();
    if (!cfg.tls_client_ca.empty()) {
      auto verifier = ClientCertVerifier::Load(cfg.tls_client_ca);
      if (!verifier.ok()) return verifier.status();
      plan.client_certs = *std::move(verifier);
    }
    plan.credentials = grpc::SslServerCredentials(*options);
    plan.transport = plan.client_certs ? "mutual TLS" : "TLS";
    return plan;
  }
  plan.credentials = grpc::InsecureServerCredentials();
  plan.transport = "plaintext";
  if (plan.address.loopback) return plan;
  if (!cfg.insecure_listen)
    return absl::FailedPreconditionError(absl::StrCat(
        "listen address ", cfg.listen,
        " is reachable from other hosts and TLS is off, so bearer tokens would cross the network "
        "in clear: set tls_cert and tls_key (README: Serving other machines), listen on "
        "127.0.0.1, or pass --insecure-listen to accept it"));
  plan.warnings.push_back(absl::StrCat("listening on ", cfg.listen,
                                       " without TLS (--insecure-listen): bearer tokens cross the "
                                       "network in clear"));
  return plan;
}

std::string BindFailure(const ListenAddress& address) {
  if (address.kind == ListenAddress::Kind::kUnix)
    return absl::StrCat("cannot listen on unix:", address.path,
                        " (is its folder writable by caked's user?)");
  const std::string where = address.WithPort(address.port);
  const std::string owner = address.port > 0 ? PortOwner(address.port) : "";
  if (!owner.empty())
    return absl::StrCat("cannot listen on ", where, ": the port is in use by ", owner,
                        "; stop it or choose another port");
  return absl::StrCat("cannot listen on ", where,
                      ": the port is in use by a process this user cannot see, or the address is "
                      "not one of this host's");
}

}  // namespace cake::server
