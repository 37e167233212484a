// FFLAS-FFPACK as a bench_gfp.py peer: a C API over fgemm / fgemv, FFPACK::Rank, fgesv and
// Invert, loaded through ctypes by fflas_peer.py. ffp_create converts the uint64 operands
// into the field's elements once, so that each timed call runs just the operation.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <givaro/modular.h>
#include <givaro/modular-integer.h>
#include <fflas-ffpack/fflas-ffpack.h>

namespace {

struct Peer {
    virtual ~Peer() = default;
    virtual void matmul() = 0;                    // C = A B (fgemv when B is one column)
    virtual int64_t rank() = 0;
    virtual int solve() = 0;                      // C = A^-1 B; 0 when A is invertible
    virtual int inverse() = 0;                    // C = A^-1;   0 when A is invertible
    virtual void result(uint64_t *out) const = 0; // C, as residues in [0, p)
};

template <class Field>
struct FieldPeer final : Peer {
    using Element = typename Field::Element;
    Field F;
    size_t n, k;                                  // A is n x n, B is n x k (row-major)
    std::vector<Element> A, B, C, work;           // work: a fresh copy of A for FFPACK

    FieldPeer(const Field &field, size_t n_, size_t k_, const uint64_t *a, const uint64_t *b)
        : F(field), n(n_), k(k_), A(n_ * n_), B(n_ * k_), C(n_ * k_), work(n_ * n_) {
        for (size_t i = 0; i < n * n; ++i) F.init(A[i], a[i]);
        for (size_t i = 0; i < n * k; ++i) F.init(B[i], b[i]);
    }

    void matmul() override {
        if (k == 1)
            FFLAS::fgemv(F, FFLAS::FflasNoTrans, n, n, F.one, A.data(), n, B.data(), 1,
                         F.zero, C.data(), 1);
        else
            FFLAS::fgemm(F, FFLAS::FflasNoTrans, FFLAS::FflasNoTrans, n, k, n, F.one,
                         A.data(), n, B.data(), k, F.zero, C.data(), k);
    }

    // Rank and fgesv factor A in place: each call starts from a copy, as a caller that
    // keeps A must.
    Element *fresh_A() {
        std::copy(A.begin(), A.end(), work.begin());
        return work.data();
    }

    int64_t rank() override { return int64_t(FFPACK::Rank(F, n, n, fresh_A(), n)); }

    int solve() override {
        int info = 0;
        size_t r = FFPACK::fgesv(F, FFLAS::FflasLeft, n, n, k, fresh_A(), n, C.data(), k,
                                 B.data(), k, &info);
        return r == n && info == 0 ? 0 : 1;
    }

    int inverse() override {                      // C is n x n only when k == n
        if (k != n) return -1;
        int nullity = 0;
        FFPACK::Invert(F, n, A.data(), n, C.data(), n, nullity);
        return nullity;
    }

    // Through an Integer, since balanced fields hold residues in (-p/2, p/2).
    void result(uint64_t *out) const override {
        const Givaro::Integer p(F.characteristic());
        for (size_t i = 0; i < n * k; ++i) {
            Givaro::Integer r;
            F.convert(r, C[i]);
            out[i] = uint64_t(r < 0 ? r + p : r);
        }
    }
};

// FFLAS's fastest field for p: Modular<double> runs on dgemm with delayed reductions;
// balanced int64 residues (|x| < p/2) let its integer kernels accumulate exactly up to
// p ~ 2^32.5, but products of more than 2^31 accumulate only a few terms between two
// reductions, and there Modular<Integer>, which multiplies through residues modulo
// several double primes, is faster. Its elimination works on GMP integers, though, so
// rank / solve / inverse stay in int64 as long as it is exact.
template <class Visit>
auto with_field(uint64_t p, bool products, Visit visit) {
    using Balanced = Givaro::ModularBalanced<int64_t>;
    const uint64_t balanced_max = products ? uint64_t(1) << 31 : Balanced::maxCardinality();
    if (p < (uint64_t(1) << 26)) return visit(Givaro::Modular<double>(double(p)));
    if (p < balanced_max) return visit(Balanced(int64_t(p)));
    return visit(Givaro::Modular<Givaro::Integer>(Givaro::Integer(p)));
}

Peer *peer(void *handle) { return static_cast<Peer *>(handle); }

}  // namespace

extern "C" {

// The peer of A (n x n) and B (n x k), row-major uint64 residues, in the field for
// products (matmul) or for elimination (rank, solve, inverse); nullptr on failure.
void *ffp_create(uint64_t p, int products, uint64_t n, uint64_t k, const uint64_t *a,
                 const uint64_t *b) {
    try {
        return with_field(p, products, [&](const auto &F) -> Peer * {
            return new FieldPeer<std::decay_t<decltype(F)>>(F, n, k, a, b);
        });
    } catch (...) {
        return nullptr;
    }
}

// The name of the field ffp_create uses, e.g. "Modular<double>".
const char *ffp_field(uint64_t p, int products) {
    return with_field(p, products, [](const auto &F) {
        static const std::string name = F.type_string();
        return name.c_str();
    });
}

void ffp_free(void *handle) { delete peer(handle); }
void ffp_matmul(void *handle) { peer(handle)->matmul(); }
int64_t ffp_rank(void *handle) { return peer(handle)->rank(); }
int ffp_solve(void *handle) { return peer(handle)->solve(); }
int ffp_inverse(void *handle) { return peer(handle)->inverse(); }
void ffp_result(void *handle, uint64_t *out) { peer(handle)->result(out); }

}  // extern "C"
