/*-------------------------------------------------------------------------
 *
 * go_math.c
 *	  Log2 and Exp2 as Go's math package computes them on x86-64, for the
 *	  PromQL histogram functions (histogram_functions.c).
 *
 * histogram_quantile and histogram_fraction interpolate within exponential
 * buckets on a logarithmic scale with Go's math.Log2 and math.Exp2.  Neither
 * is correctly rounded, and C's log2 and exp2 are different functions that
 * differ from them in the last bit now and then; to give Prometheus's answers
 * bit for bit, promread computes what Go computes, operation for operation:
 *
 * - Log2(x): x = frac * 2^exp with frac in [0.5, 1) (frexp); exactly exp - 1
 *   when frac is 0.5, else Log(frac) * (1/ln 2) + exp.
 * - Log(x) on x86-64 is Go's assembly version of FreeBSD's e_log.c (the
 *   classic fdlibm algorithm): reduce to f1 in (sqrt(2)/2, sqrt(2)],
 *   f = f1 - 1, s = f / (2 + f), a polynomial in s^2 of Remez
 *   coefficients L1..L7, and k * ln 2 in two parts.  The assembly halves
 *   the reduction test as f1 <= sqrt(2)/2 where the Go code says <.
 * - Exp2(x): k = x rounded half away from zero, t = x - k, then
 *   e^(t ln 2) * 2^k by fdlibm's e_exp.c polynomial (P1..P5) on
 *   hi = t * ln2_hi, lo = -t * ln2_lo.
 *
 * The constants are fdlibm's, the same in every implementation of it.
 * The code must not be compiled with fused multiply-adds (the Makefile
 * builds this file with -ffp-contract=off): Go on x86-64 rounds every
 * operation.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "histogram/histogram_functions.h"

/* fdlibm's ln 2 split in two: the high part has trailing zero bits */
#define LN2_HI		6.93147180369123816490e-01	/* 0x3fe62e42fee00000 */
#define LN2_LO		1.90821492927058770002e-10	/* 0x3dea39ef35793c76 */

/* Go's math.Log, as its x86-64 assembly computes it. */
static double
go_log(double x)
{
	static const double L1 = 6.666666666666735130e-01,
				L2 = 3.999999999940941908e-01,
				L3 = 2.857142874366239149e-01,
				L4 = 2.222219843214978396e-01,
				L5 = 1.818357216161805012e-01,
				L6 = 1.531383769920937332e-01,
				L7 = 1.479819860511658591e-01;
	const double half_sqrt2 = 7.07106781186547524401e-01;
	uint64		bits;
	double		f1,
				k,
				f,
				s,
				s2,
				s4,
				t1,
				t2,
				R,
				hfsq;

	memcpy(&bits, &x, sizeof(bits));
	if ((bits & ~(UINT64CONST(1) << 63)) == 0)
		return -INFINITY;
	if ((int64) bits < 0)
		return NAN;
	if (bits >= UINT64CONST(0x7ff0000000000000))
		return x;				/* +Inf or NaN */

	/* x = f1 * 2^k, f1 in [0.5, 1), from x's bits (x, a frexp fraction, is normal) */
	k = (double) ((int) ((bits >> 52) & 0x7ff) - 0x3fe);
	bits = (bits & UINT64CONST(0x000fffffffffffff)) | UINT64CONST(0x3fe0000000000000);
	memcpy(&f1, &bits, sizeof(f1));
	if (f1 <= half_sqrt2)
	{
		k -= 1;
		f1 *= 2;
	}
	f = f1 - 1;
	s = f / (2 + f);
	s2 = s * s;
	s4 = s2 * s2;
	t1 = s2 * (L1 + s4 * (L3 + s4 * (L5 + s4 * L7)));
	t2 = s4 * (L2 + s4 * (L4 + s4 * L6));
	R = t1 + t2;
	hfsq = 0.5 * f * f;
	return k * LN2_HI - ((hfsq - (s * (hfsq + R) + k * LN2_LO)) - f);
}

/* Go's math.Log2. */
double
PromGoLog2(double x)
{
	int			exp;
	double		frac;

	/* Go's frexp gives these an exponent of 0, and Log(x) * (1/ln 2) is Log(x) */
	if (x == 0 || !isfinite(x))
		return go_log(x);
	frac = frexp(x, &exp);
	/* exact powers of two give exact answers */
	if (frac == 0.5)
		return (double) (exp - 1);
	return go_log(frac) * M_LOG2E + (double) exp;
}

/* Go's math.Exp2. */
double
PromGoExp2(double x)
{
	static const double P1 = 1.66666666666666657415e-01,
				P2 = -2.77777777770155933842e-03,
				P3 = 6.61375632143793436117e-05,
				P4 = -1.65339022054652515390e-06,
				P5 = 4.13813679705723846039e-08;
	int			k = 0;
	double		t,
				hi,
				lo,
				r,
				c,
				y;

	if (isnan(x))
		return x;
	if (x > 1.0239999999999999e+03)
		return INFINITY;
	if (x < -1.0740e+03)
		return 0;

	/* x = k + t, |t| <= 1/2, k rounded half away from zero */
	if (x > 0)
		k = (int) (x + 0.5);
	else if (x < 0)
		k = (int) (x - 0.5);
	t = x - (double) k;
	hi = t * LN2_HI;
	lo = -t * LN2_LO;

	/* e^r * 2^k, r = hi - lo */
	r = hi - lo;
	t = r * r;
	c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
	y = 1 - ((lo - (r * c) / (2 - c)) - hi);
	return ldexp(y, k);
}
