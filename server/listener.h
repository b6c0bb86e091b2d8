// How caked listens, decided before anything binds: the checked address (listen_address.h), the
// transport credentials (TLS from tls_credentials.h, or plaintext where that is safe or the
// operator said --insecure-listen), and the client-certificate check of mutual TLS.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config.h"
#include "grpcpp/security/server_credentials.h"
#include "listen_address.h"
#include "tls_credentials.h"

namespace cake::server {

struct ListenerPlan {
  ListenAddress address;
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::unique_ptr<ClientCertVerifier> client_certs;  // set under mutual TLS
  std::string transport;                             // "plaintext", "TLS" or "mutual TLS"
  std::vector<std::string> warnings;                 // logged at every start
};

// InvalidArgument / FailedPrecondition in one line naming the key and the fix: a malformed
// address, a socket folder anyone may write, TLS files that are unreadable, mismatched or
// expired, TLS keys on a unix socket, or a TCP address other hosts reach without TLS (unless
// insecure_listen).
absl::StatusOr<ListenerPlan> PlanListener(const DaemonConfig& cfg);

// Why binding `address` failed, in one line: the port's owner when it can be seen.
std::string BindFailure(const ListenAddress& address);

}  // namespace cake::server
