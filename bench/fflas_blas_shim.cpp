// FFLAS-FFPACK calls the plain CBLAS names (cblas_dgemm, int sizes). numpy's wheels ship an
// OpenBLAS whose names carry a prefix and a suffix (scipy_cblas_dgemm64_) and whose sizes are
// 64-bit. These forwarders let fflas_peer.cpp run on that very library, so FFLAS, ffcode and
// the float64 column share one BLAS and one thread pool. Compiled by bench_gfp.py with
// -DFFP_BLAS_PREFIX=... -DFFP_BLAS_SUFFIX=... -DFFP_BLAS_INT=... (only for such a BLAS).
#include <cstdint>

#include <fflas-ffpack/fflas-ffpack-config.h>
#include <fflas-ffpack/config-blas.h>

#define FFP_PASTE_(a, b, c) a##b##c
#define FFP_PASTE(a, b, c) FFP_PASTE_(a, b, c)
#define FFP_NAME(f) FFP_PASTE(FFP_BLAS_PREFIX, f, FFP_BLAS_SUFFIX)

// One parameter list, read with I = the library's integer in numpy_blas and with I = int
// (FFLAS's declaration) in fflas_side. extern "C" names ignore the namespaces.
namespace numpy_blas { using I = FFP_BLAS_INT; }
namespace fflas_side { using I = int; }

#define FORWARD(ret, name, params, args)                                                    \
    namespace numpy_blas { extern "C" ret FFP_NAME(name) params; }                          \
    namespace fflas_side { extern "C" ret name params { return numpy_blas::FFP_NAME(name) args; } }

using Order = CBLAS_ORDER;
using Trans = CBLAS_TRANSPOSE;
using Side = CBLAS_SIDE;
using Uplo = CBLAS_UPLO;
using Diag = CBLAS_DIAG;

// The routines FFLAS-FFPACK 2.5 calls.
FORWARD(void, cblas_daxpy, (I n, double alpha, const double *x, I incx, double *y, I incy),
        (n, alpha, x, incx, y, incy))
FORWARD(void, cblas_saxpy, (I n, float alpha, const float *x, I incx, float *y, I incy),
        (n, alpha, x, incx, y, incy))
FORWARD(double, cblas_ddot, (I n, const double *x, I incx, const double *y, I incy),
        (n, x, incx, y, incy))
FORWARD(float, cblas_sdot, (I n, const float *x, I incx, const float *y, I incy),
        (n, x, incx, y, incy))
FORWARD(void, cblas_dcopy, (I n, const double *x, I incx, double *y, I incy),
        (n, x, incx, y, incy))
FORWARD(void, cblas_scopy, (I n, const float *x, I incx, float *y, I incy),
        (n, x, incx, y, incy))
FORWARD(void, cblas_dscal, (I n, double alpha, double *x, I incx), (n, alpha, x, incx))
FORWARD(void, cblas_sscal, (I n, float alpha, float *x, I incx), (n, alpha, x, incx))
FORWARD(void, cblas_dgemv,
        (Order o, Trans t, I m, I n, double alpha, const double *a, I lda, const double *x,
         I incx, double beta, double *y, I incy),
        (o, t, m, n, alpha, a, lda, x, incx, beta, y, incy))
FORWARD(void, cblas_sgemv,
        (Order o, Trans t, I m, I n, float alpha, const float *a, I lda, const float *x,
         I incx, float beta, float *y, I incy),
        (o, t, m, n, alpha, a, lda, x, incx, beta, y, incy))
FORWARD(void, cblas_dger,
        (Order o, I m, I n, double alpha, const double *x, I incx, const double *y, I incy,
         double *a, I lda),
        (o, m, n, alpha, x, incx, y, incy, a, lda))
FORWARD(void, cblas_dtrsm,
        (Order o, Side s, Uplo u, Trans t, Diag d, I m, I n, double alpha, const double *a,
         I lda, double *b, I ldb),
        (o, s, u, t, d, m, n, alpha, a, lda, b, ldb))
FORWARD(void, cblas_dtrmm,
        (Order o, Side s, Uplo u, Trans t, Diag d, I m, I n, double alpha, const double *a,
         I lda, double *b, I ldb),
        (o, s, u, t, d, m, n, alpha, a, lda, b, ldb))
FORWARD(void, cblas_dgemm,
        (Order o, Trans ta, Trans tb, I m, I n, I k, double alpha, const double *a, I lda,
         const double *b, I ldb, double beta, double *c, I ldc),
        (o, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
FORWARD(void, cblas_sgemm,
        (Order o, Trans ta, Trans tb, I m, I n, I k, float alpha, const float *a, I lda,
         const float *b, I ldb, float beta, float *c, I ldc),
        (o, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
