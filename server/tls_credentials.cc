#include "tls_credentials.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"

namespace cake::server {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct StoreFree {
  void operator()(X509_STORE* s) const { X509_STORE_free(s); }
};
struct StoreCtxFree {
  void operator()(X509_STORE_CTX* c) const { X509_STORE_CTX_free(c); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Cert = std::unique_ptr<X509, X509Free>;

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", path, ": cannot be read: ", std::strerror(err)));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().empty())
    return absl::FailedPreconditionError(absl::StrCat(what, " ", path, ": the file is empty"));
  return text.str();
}

Bio MemoryBio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Every certificate in a PEM text, in order.
std::vector<Cert> ReadCerts(const std::string& pem) {
  std::vector<Cert> out;
  Bio bio = MemoryBio(pem);
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out.emplace_back(x);
  ERR_clear_error();  // the end of the text reads as an error
  return out;
}

std::string TimeText(const ASN1_TIME* t) {
  Bio bio(BIO_new(BIO_s_mem()));
  ASN1_TIME_print(bio.get(), t);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string OpensslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "no detail";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

// FailedPrecondition unless `cert` is valid now.
absl::Status CheckValidNow(X509* cert, const std::string& path, const char* what) {
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0)
    return absl::FailedPreconditionError(absl::StrCat(
        what, " ", path, ": the certificate expired on ", TimeText(X509_get0_notAfter(cert))));
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0)
    return absl::FailedPreconditionError(absl::StrCat(what, " ", path,
                                                      ": the certificate is not valid before ",
                                                      TimeText(X509_get0_notBefore(cert))));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<grpc::SslServerCredentialsOptions> LoadServerTls(const TlsFiles& files) {
  if (files.cert.empty() != files.key.empty())
    return absl::FailedPreconditionError(
        "TLS needs both tls_cert and tls_key (the certificate and its private key)");
  auto cert_pem = ReadPem(files.cert, "tls_cert");
  if (!cert_pem.ok()) return cert_pem.status();
  auto key_pem = ReadPem(files.key, "tls_key");
  if (!key_pem.ok()) return key_pem.status();
  std::vector<Cert> chain = ReadCerts(*cert_pem);
  if (chain.empty())
    return absl::FailedPreconditionError(
        absl::StrCat("tls_cert ", files.cert, ": no PEM certificate in it"));
  if (absl::Status s = CheckValidNow(chain.front().get(), files.cert, "tls_cert"); !s.ok())
    return s;
  Bio key_bio = MemoryBio(*key_pem);
  std::unique_ptr<EVP_PKEY, KeyFree> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr)
    return absl::FailedPreconditionError(absl::StrCat(
        "tls_key ", files.key, ": no unencrypted PEM private key in it (", OpensslError(), ")"));
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::FailedPreconditionError(absl::StrCat(
        "tls_key ", files.key, " does not match the certificate in tls_cert ", files.cert));
  }
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({*key_pem, *cert_pem});
  if (!files.client_ca.empty()) {
    auto ca_pem = ReadPem(files.client_ca, "tls_client_ca");
    if (!ca_pem.ok()) return ca_pem.status();
    if (ReadCerts(*ca_pem).empty())
      return absl::FailedPreconditionError(
          absl::StrCat("tls_client_ca ", files.client_ca, ": no PEM certificate in it"));
    // The handshake requires a certificate; ClientCertVerifier judges it on every call.
    options.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_BUT_DONT_VERIFY;
    options.pem_root_certs = *ca_pem;
  }
  return options;
}

struct ClientCertVerifier::Store {
  std::unique_ptr<X509_STORE, StoreFree> store;
};

ClientCertVerifier::ClientCertVerifier(std::unique_ptr<Store> store) : store_(std::move(store)) {}
ClientCertVerifier::~ClientCertVerifier() = default;

absl::StatusOr<std::unique_ptr<ClientCertVerifier>> ClientCertVerifier::Load(
    const std::string& ca_file) {
  auto pem = ReadPem(ca_file, "tls_client_ca");
  if (!pem.ok()) return pem.status();
  std::vector<Cert> cas = ReadCerts(*pem);
  if (cas.empty())
    return absl::FailedPreconditionError(
        absl::StrCat("tls_client_ca ", ca_file, ": no PEM certificate in it"));
  auto store = std::make_unique<Store>();
  store->store.reset(X509_STORE_new());
  for (const Cert& ca : cas)
    if (X509_STORE_add_cert(store->store.get(), ca.get()) != 1)
      return absl::FailedPreconditionError(
          absl::StrCat("tls_client_ca ", ca_file, ": ", OpensslError()));
  return std::unique_ptr<ClientCertVerifier>(new ClientCertVerifier(std::move(store)));
}

absl::Status ClientCertVerifier::Verify(const std::string& peer_pem) const {
  if (peer_pem.empty())
    return absl::UnauthenticatedError("the connection presented no client certificate");
  std::vector<Cert> certs = ReadCerts(peer_pem);
  if (certs.empty()) return absl::UnauthenticatedError("the client certificate could not be read");
  std::unique_ptr<X509_STORE_CTX, StoreCtxFree> ctx(X509_STORE_CTX_new());
  if (X509_STORE_CTX_init(ctx.get(), store_->store.get(), certs.front().get(), nullptr) != 1)
    return absl::InternalError(absl::StrCat("certificate check: ", OpensslError()));
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_CLIENT);
  if (X509_verify_cert(ctx.get()) != 1) {
    const int err = X509_STORE_CTX_get_error(ctx.get());
    ERR_clear_error();
    return absl::UnauthenticatedError(
        absl::StrCat("the client certificate is not accepted by tls_client_ca: ",
                     X509_verify_cert_error_string(err)));
  }
  return absl::OkStatus();
}

}  // namespace cake::server
