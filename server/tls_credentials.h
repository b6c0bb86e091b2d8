// TLS for caked's TCP listener: the certificate and key files are read and checked at start
// (readable, PEM, the key matches the certificate, the certificate valid now), so a bad file
// stops the daemon with its name and the reason instead of failing every handshake later.
// With a client CA (mutual TLS) every connection must present a certificate; the handshake
// takes any, and ClientCertVerifier checks it against the CA on every call, so a certificate of
// another CA is refused as UNAUTHENTICATED with a reason the audit log records. Thread-safe
// after construction.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"

namespace cake::server {

struct TlsFiles {
  std::string cert;       // PEM certificate chain of the daemon
  std::string key;        // PEM private key of that certificate
  std::string client_ca;  // PEM CA certificates that sign client certificates ("" = no mTLS)
};

// FailedPrecondition naming the file and what is wrong with it.
absl::StatusOr<grpc::SslServerCredentialsOptions> LoadServerTls(const TlsFiles& files);

class ClientCertVerifier {
 public:
  // FailedPrecondition naming the file when it holds no usable CA certificate.
  static absl::StatusOr<std::unique_ptr<ClientCertVerifier>> Load(const std::string& ca_file);
  ~ClientCertVerifier();
  ClientCertVerifier(const ClientCertVerifier&) = delete;
  ClientCertVerifier& operator=(const ClientCertVerifier&) = delete;

  // Unauthenticated with the reason when `peer_pem` (the connection's leaf certificate, as gRPC's
  // auth context gives it) is missing, unreadable or not signed by the CA.
  absl::Status Verify(const std::string& peer_pem) const;

 private:
  struct Store;
  explicit ClientCertVerifier(std::unique_ptr<Store> store);
  std::unique_ptr<Store> store_;
};

}  // namespace cake::server
