/*-------------------------------------------------------------------------
 *
 * histogram_functions.c
 *	  PromQL's histogram functions on prom_histogram values:
 *	  histogram_count, _sum, _avg, _stddev, _stdvar, _quantile and _fraction,
 *	  and the list of a histogram's buckets.
 *
 * They give what Prometheus 3.16 gives on the same histogram, bit for bit
 * (test/scripts/histogram-functions-check compares them with the real
 * Prometheus).  So they do what Prometheus does, step by step:
 *
 * 1. An integer histogram is first made a float one, as Go's
 *    Histogram.ToFloat does: the count and zero count converted to double,
 *    each bucket's count the running sum of its deltas, each delta
 *    converted to double before it is added (not the int64 sum converted).
 * 2. The buckets, in ascending order as FloatHistogram.AllBucketIterator
 *    gives them: the negative buckets from the most negative, the zero
 *    bucket [-threshold, threshold] if its count is above 0, the positive
 *    buckets.  A bucket of index i of an exponential schema s covers
 *    (base^(i-1), base^i] with base = 2^(2^-s) (mirrored for negative
 *    buckets), a bound that falls inside the zero bucket moved to its
 *    threshold; Prometheus computes the bounds from a table of the powers
 *    of 2 in [0.5, 1) that are not all correctly rounded, and that table
 *    is here as Prometheus has it (the answers depend on its exact bits).
 *    Custom buckets (schema -53) are (-Inf, c0], (c0, c1], ... (cn, +Inf].
 * 3. histogram_quantile and histogram_fraction interpolate linearly in the
 *    zero bucket and custom buckets, and exponentially (on a log2 scale)
 *    in exponential buckets, with Go's Log2 and Exp2 (go_math.c).  Their
 *    special cases, the zero bucket's natural bound of 0 when only one
 *    sign has buckets, and NaN observations (a NaN sum) are quantile.go's.
 *
 * Every function is IMMUTABLE STRICT: a histogram without observations
 * gives what Prometheus gives (mostly NaN), never an error.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "histogram/histogram.h"
#include "histogram/histogram_functions.h"
#include "miscadmin.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(prom_histogram_count);
PG_FUNCTION_INFO_V1(prom_histogram_sum);
PG_FUNCTION_INFO_V1(prom_histogram_avg);
PG_FUNCTION_INFO_V1(prom_histogram_stddev);
PG_FUNCTION_INFO_V1(prom_histogram_stdvar);
PG_FUNCTION_INFO_V1(prom_histogram_quantile);
PG_FUNCTION_INFO_V1(prom_histogram_fraction);
PG_FUNCTION_INFO_V1(prom_histogram_buckets);

/*
 * Prometheus's bucket bounds in [0.5, 1) for schemas 0 to 8: schema s has
 * 2^s of them, 2^(i/2^s - 1) for i from 0, starting at index 2^s - 1.
 */
static const double exponential_bounds[511] = {
	/* schema 0: from index 0 */
	0.5,
	/* schema 1: from index 1 */
	0.5, 0.7071067811865475,
	/* schema 2: from index 3 */
	0.5, 0.5946035575013605, 0.7071067811865475, 0.8408964152537144,
	/* schema 3: from index 7 */
	0.5, 0.5452538663326288, 0.5946035575013605, 0.6484197773255048,
	0.7071067811865475, 0.7711054127039704, 0.8408964152537144, 0.9170040432046711,
	/* schema 4: from index 15 */
	0.5, 0.5221368912137069, 0.5452538663326288, 0.5693943173783458,
	0.5946035575013605, 0.620928906036742, 0.6484197773255048, 0.6771277734684463,
	0.7071067811865475, 0.7384130729697496, 0.7711054127039704, 0.805245165974627,
	0.8408964152537144, 0.8781260801866495, 0.9170040432046711, 0.9576032806985735,
	/* schema 5: from index 31 */
	0.5, 0.5109485743270583, 0.5221368912137069, 0.5335702003384117,
	0.5452538663326288, 0.5571933712979462, 0.5693943173783458, 0.5818624293887887,
	0.5946035575013605, 0.6076236799902344, 0.620928906036742, 0.6345254785958666,
	0.6484197773255048, 0.6626183215798706, 0.6771277734684463, 0.6919549409819159,
	0.7071067811865475, 0.7225904034885232, 0.7384130729697496, 0.7545822137967112,
	0.7711054127039704, 0.7879904225539431, 0.805245165974627, 0.8228777390769823,
	0.8408964152537144, 0.8593096490612387, 0.8781260801866495, 0.8973545375015533,
	0.9170040432046711, 0.9370838170551498, 0.9576032806985735, 0.9785720620876999,
	/* schema 6: from index 63 */
	0.5, 0.5054446430258502, 0.5109485743270583, 0.5165124395106142,
	0.5221368912137069, 0.5278225891802786, 0.5335702003384117, 0.5393803988785598,
	0.5452538663326288, 0.5511912916539204, 0.5571933712979462, 0.5632608093041209,
	0.5693943173783458, 0.5755946149764913, 0.5818624293887887, 0.5881984958251406,
	0.5946035575013605, 0.6010783657263515, 0.6076236799902344, 0.6142402680534349,
	0.620928906036742, 0.6276903785123455, 0.6345254785958666, 0.6414350080393891,
	0.6484197773255048, 0.6554806057623822, 0.6626183215798706, 0.6698337620266515,
	0.6771277734684463, 0.6845012114872953, 0.6919549409819159, 0.6994898362691555,
	0.7071067811865475, 0.7148066691959849, 0.7225904034885232, 0.7304588970903234,
	0.7384130729697496, 0.7464538641456323, 0.7545822137967112, 0.762799075372269,
	0.7711054127039704, 0.7795022001189185, 0.7879904225539431, 0.7965710756711334,
	0.805245165974627, 0.8140137109286738, 0.8228777390769823, 0.8318382901633681,
	0.8408964152537144, 0.8500531768592616, 0.8593096490612387, 0.8686669176368529,
	0.8781260801866495, 0.8876882462632604, 0.8973545375015533, 0.9071260877501991,
	0.9170040432046711, 0.9269895625416926, 0.9370838170551498, 0.9472879907934827,
	0.9576032806985735, 0.9680308967461471, 0.9785720620876999, 0.9892280131939752,
	/* schema 7: from index 127 */
	0.5, 0.5027149505564014, 0.5054446430258502, 0.5081891574554764,
	0.5109485743270583, 0.5137229745593818, 0.5165124395106142, 0.5193170509806894,
	0.5221368912137069, 0.5249720429003435, 0.5278225891802786, 0.5306886136446309,
	0.5335702003384117, 0.5364674337629877, 0.5393803988785598, 0.5423091811066545,
	0.5452538663326288, 0.5482145409081883, 0.5511912916539204, 0.5541842058618393,
	0.5571933712979462, 0.5602188762048033, 0.5632608093041209, 0.5663192597993595,
	0.5693943173783458, 0.572486072215902, 0.5755946149764913, 0.5787200368168754,
	0.5818624293887887, 0.585021884841625, 0.5881984958251406, 0.5913923554921704,
	0.5946035575013605, 0.5978321960199137, 0.6010783657263515, 0.6043421618132907,
	0.6076236799902344, 0.6109230164863786, 0.6142402680534349, 0.6175755319684665,
	0.620928906036742, 0.6243004885946023, 0.6276903785123455, 0.6310986751971253,
	0.6345254785958666, 0.637970889198196, 0.6414350080393891, 0.6449179367033329,
	0.6484197773255048, 0.6519406325959679, 0.6554806057623822, 0.659039800633032,
	0.6626183215798706, 0.6662162735415805, 0.6698337620266515, 0.6734708931164728,
	0.6771277734684463, 0.6808045103191123, 0.6845012114872953, 0.688217985377265,
	0.6919549409819159, 0.6957121878859629, 0.6994898362691555, 0.7032879969095076,
	0.7071067811865475, 0.7109463010845827, 0.7148066691959849, 0.718687998724491,
	0.7225904034885232, 0.7265139979245261, 0.7304588970903234, 0.7344252166684908,
	0.7384130729697496, 0.7424225829363761, 0.7464538641456323, 0.7505070348132126,
	0.7545822137967112, 0.7586795205991071, 0.762799075372269, 0.7669409989204777,
	0.7711054127039704, 0.7752924388424999, 0.7795022001189185, 0.7837348199827764,
	0.7879904225539431, 0.7922691326262467, 0.7965710756711334, 0.8008963778413465,
	0.805245165974627, 0.8096175675974316, 0.8140137109286738, 0.8184337248834821,
	0.8228777390769823, 0.8273458838280969, 0.8318382901633681, 0.8363550898207981,
	0.8408964152537144, 0.8454623996346523, 0.8500531768592616, 0.8546688815502312,
	0.8593096490612387, 0.8639756154809185, 0.8686669176368529, 0.8733836930995842,
	0.8781260801866495, 0.8828942179666361, 0.8876882462632604, 0.8925083056594671,
	0.8973545375015533, 0.9022270839033115, 0.9071260877501991, 0.9120516927035263,
	0.9170040432046711, 0.9219832844793128, 0.9269895625416926, 0.9320230241988943,
	0.9370838170551498, 0.9421720895161669, 0.9472879907934827, 0.9524316709088368,
	0.9576032806985735, 0.9628029718180622, 0.9680308967461471, 0.9732872087896164,
	0.9785720620876999, 0.9838856116165875, 0.9892280131939752, 0.9945994234836328,
	/* schema 8: from index 255 */
	0.5, 0.5013556375251013, 0.5027149505564014, 0.5040779490592088,
	0.5054446430258502, 0.5068150424757447, 0.5081891574554764, 0.509566998038869,
	0.5109485743270583, 0.5123338964485679, 0.5137229745593818, 0.5151158188430205,
	0.5165124395106142, 0.5179128468009786, 0.5193170509806894, 0.520725062344158,
	0.5221368912137069, 0.5235525479396449, 0.5249720429003435, 0.526395386502313,
	0.5278225891802786, 0.5292536613972564, 0.5306886136446309, 0.5321274564422321,
	0.5335702003384117, 0.5350168559101208, 0.5364674337629877, 0.5379219445313954,
	0.5393803988785598, 0.5408428074966075, 0.5423091811066545, 0.5437795304588847,
	0.5452538663326288, 0.5467321995364429, 0.5482145409081883, 0.549700901315111,
	0.5511912916539204, 0.5526857228508706, 0.5541842058618393, 0.5556867516724088,
	0.5571933712979462, 0.5587040757836845, 0.5602188762048033, 0.5617377836665098,
	0.5632608093041209, 0.564787964283144, 0.5663192597993595, 0.5678547070789026,
	0.5693943173783458, 0.5709381019847808, 0.572486072215902, 0.5740382394200894,
	0.5755946149764913, 0.5771552102951081, 0.5787200368168754, 0.5802891060137493,
	0.5818624293887887, 0.5834400184762408, 0.585021884841625, 0.5866080400818185,
	0.5881984958251406, 0.5897932637314379, 0.5913923554921704, 0.5929957828304968,
	0.5946035575013605, 0.5962156912915756, 0.5978321960199137, 0.5994530835371903,
	0.6010783657263515, 0.6027080545025619, 0.6043421618132907, 0.6059806996384005,
	0.6076236799902344, 0.6092711149137041, 0.6109230164863786, 0.6125793968185725,
	0.6142402680534349, 0.6159056423670379, 0.6175755319684665, 0.6192499490999082,
	0.620928906036742, 0.622612415087629, 0.6243004885946023, 0.6259931389331581,
	0.6276903785123455, 0.6293922197748583, 0.6310986751971253, 0.6328097572894031,
	0.6345254785958666, 0.6362458516947014, 0.637970889198196, 0.6397006037528346,
	0.6414350080393891, 0.6431741147730128, 0.6449179367033329, 0.6466664866145447,
	0.6484197773255048, 0.6501778216898253, 0.6519406325959679, 0.6537082229673385,
	0.6554806057623822, 0.6572577939746774, 0.659039800633032, 0.6608266388015788,
	0.6626183215798706, 0.6644148621029772, 0.6662162735415805, 0.6680225691020727,
	0.6698337620266515, 0.6716498655934177, 0.6734708931164728, 0.6752968579460171,
	0.6771277734684463, 0.6789636531064505, 0.6808045103191123, 0.6826503586020058,
	0.6845012114872953, 0.6863570825438342, 0.688217985377265, 0.690083933630119,
	0.6919549409819159, 0.6938310211492645, 0.6957121878859629, 0.6975984549830999,
	0.6994898362691555, 0.7013863456101023, 0.7032879969095076, 0.7051948041086352,
	0.7071067811865475, 0.7090239421602076, 0.7109463010845827, 0.7128738720527471,
	0.7148066691959849, 0.7167447066838943, 0.718687998724491, 0.7206365595643126,
	0.7225904034885232, 0.7245495448210174, 0.7265139979245261, 0.7284837772007218,
	0.7304588970903234, 0.7324393720732029, 0.7344252166684908, 0.7364164454346837,
	0.7384130729697496, 0.7404151139112358, 0.7424225829363761, 0.7444354947621984,
	0.7464538641456323, 0.7484777058836176, 0.7505070348132126, 0.7525418658117031,
	0.7545822137967112, 0.7566280937263048, 0.7586795205991071, 0.7607365094544071,
	0.762799075372269, 0.7648672334736434, 0.7669409989204777, 0.7690203869158282,
	0.7711054127039704, 0.7731960915705107, 0.7752924388424999, 0.7773944698885442,
	0.7795022001189185, 0.7816156449856788, 0.7837348199827764, 0.7858597406461707,
	0.7879904225539431, 0.7901268813264122, 0.7922691326262467, 0.7944171921585818,
	0.7965710756711334, 0.7987307989543135, 0.8008963778413465, 0.8030678282083853,
	0.805245165974627, 0.8074284071024302, 0.8096175675974316, 0.8118126635086642,
	0.8140137109286738, 0.8162207259936375, 0.8184337248834821, 0.820652723822003,
	0.8228777390769823, 0.8251087869603088, 0.8273458838280969, 0.8295890460808079,
	0.8318382901633681, 0.8340936325652911, 0.8363550898207981, 0.8386226785089391,
	0.8408964152537144, 0.8431763167241966, 0.8454623996346523, 0.8477546807446661,
	0.8500531768592616, 0.8523579048290255, 0.8546688815502312, 0.8569861239649629,
	0.8593096490612387, 0.8616394738731368, 0.8639756154809185, 0.8663180910111553,
	0.8686669176368529, 0.871022112577578, 0.8733836930995842, 0.8757516765159389,
	0.8781260801866495, 0.8805069215187917, 0.8828942179666361, 0.8852879870317771,
	0.8876882462632604, 0.890095013257712, 0.8925083056594671, 0.8949281411607002,
	0.8973545375015533, 0.8997875124702672, 0.9022270839033115, 0.9046732696855155,
	0.9071260877501991, 0.909585556079304, 0.9120516927035263, 0.9145245157024483,
	0.9170040432046711, 0.9194902933879467, 0.9219832844793128, 0.9244830347552253,
	0.9269895625416926, 0.92950288621441, 0.9320230241988943, 0.9345499949706191,
	0.9370838170551498, 0.93962450902828, 0.9421720895161669, 0.9447265771954693,
	0.9472879907934827, 0.9498563490882775, 0.9524316709088368, 0.9550139751351947,
	0.9576032806985735, 0.9601996065815236, 0.9628029718180622, 0.9654133954938133,
	0.9680308967461471, 0.9706554947643201, 0.9732872087896164, 0.9759260581154889,
	0.9785720620876999, 0.9812252401044634, 0.9838856116165875, 0.9865531961276168,
	0.9892280131939752, 0.9919100824251095, 0.9945994234836328, 0.9972960560854698,
};

/* A bucket: its bounds and its (absolute) count. */
typedef struct Bucket
{
	double		lower;
	double		upper;
	double		count;
} Bucket;

/* A histogram as Prometheus's functions see it: a float one, its buckets. */
typedef struct FloatView
{
	double		count;
	double		sum;
	bool		custom;			/* schema -53 */
	uint32		npositive;		/* buckets, zero bucket not counted */
	uint32		nnegative;
	uint32		nbuckets;		/* in buckets, the zero bucket counted */
	Bucket	   *buckets;		/* ascending */
} FloatView;

/*
 * The upper bound of the exponential bucket of index idx, as Prometheus's
 * getBoundExponential: 2^(idx * 2^-schema), with the bucket ending at the
 * largest double (rather than +Inf) bounded by DBL_MAX.
 */
static double
exponential_bound(int64 idx, int schema)
{
	int64		exp;
	double		frac;

	if (schema < 0)
	{
		exp = idx * ((int64) 1 << -schema);
		if (exp == 1024)
			return DBL_MAX;
		return ldexp(1, (int) Max(Min(exp, 4096), -4096));
	}
	frac = exponential_bounds[((1 << schema) - 1) + (idx & ((1 << schema) - 1))];
	/* the floor of idx / 2^schema, plus one */
	exp = (idx >= 0 ? idx >> schema : -((-idx - 1) >> schema) - 1) + 1;
	if (frac == 0.5 && exp == 1025)
		return DBL_MAX;
	return ldexp(frac, (int) Max(Min(exp, 4096), -4096));
}

/* The upper bound of bucket idx: a custom bound, or an exponential one. */
static double
bucket_bound(const PromHistogram *h, int64 idx)
{
	if (h->schema != PROM_SCHEMA_CUSTOM)
		return exponential_bound(idx, h->schema);
	if (idx == -1)
		return -INFINITY;
	if (idx == h->ncustom_values)
		return INFINITY;
	return PromHistogramCustomValues(h)[idx];
}

/*
 * Append the buckets of one sign to view->buckets, in ascending order of
 * their values, their counts made absolute (point 1 of the header).
 */
static void
add_buckets(FloatView *view, const PromHistogram *h, bool positive)
{
	const PromBucketSpan *spans = positive ? PromHistogramPositiveSpans(h) :
		PromHistogramNegativeSpans(h);
	uint32		nspans = positive ? h->npositive_spans : h->nnegative_spans;
	const PromHistogramBucket *in = positive ? PromHistogramPositiveBuckets(h) :
		PromHistogramNegativeBuckets(h);
	uint32		n = positive ? h->npositive_buckets : h->nnegative_buckets;
	Bucket	   *out = view->buckets + view->nbuckets;
	double		running = 0;
	int64		idx = 0;
	uint32		k = 0;

	for (uint32 s = 0; s < nspans; s++)
	{
		idx += spans[s].offset;
		for (uint32 j = 0; j < spans[s].length; j++, k++, idx++)
		{
			/* negative buckets go from the most negative: fill from the end */
			Bucket	   *b = positive ? &out[k] : &out[n - 1 - k];
			double		upper = bucket_bound(h, idx);
			double		lower = bucket_bound(h, idx - 1);

			if (PromHistogramIsFloat(h))
				b->count = in[k].count;
			else
				b->count = running += (double) in[k].delta;
			b->lower = positive ? lower : -upper;
			b->upper = positive ? upper : -lower;
		}
	}
	Assert(k == n);
	view->nbuckets += n;
}

/* The float view of a histogram (see the header comment). */
static void
float_view(const PromHistogram *h, FloatView *view)
{
	double		zero_count = PromHistogramIsFloat(h) ? h->zero_count.value :
		(double) h->zero_count.integer;
	double		threshold = h->zero_threshold;

	view->count = PromHistogramIsFloat(h) ? h->count.value : (double) h->count.integer;
	view->sum = h->sum;
	view->custom = h->schema == PROM_SCHEMA_CUSTOM;
	view->npositive = h->npositive_buckets;
	view->nnegative = h->nnegative_buckets;
	view->nbuckets = 0;
	view->buckets = palloc(sizeof(Bucket) * ((Size) h->npositive_buckets +
											 h->nnegative_buckets + 1));
	add_buckets(view, h, false);
	if (zero_count > 0)
	{
		view->buckets[view->nbuckets].lower = -threshold;
		view->buckets[view->nbuckets].upper = threshold;
		view->buckets[view->nbuckets].count = zero_count;
		view->nbuckets++;
	}
	add_buckets(view, h, true);

	/* bounds inside the zero bucket move to its threshold */
	for (uint32 i = 0; i < view->nbuckets; i++)
	{
		Bucket	   *b = &view->buckets[i];

		if (b->upper < 0 && b->upper > -threshold)
			b->upper = -threshold;
		else if (b->lower > 0 && b->lower < threshold)
			b->lower = threshold;
	}
}

/* Whether a bucket straddles zero: the zero bucket of an exponential schema. */
static inline bool
is_zero_bucket(const Bucket *b)
{
	return b->lower <= 0 && b->upper >= 0;
}

/* The zero bucket's natural bound of 0 when only one sign has buckets. */
static void
natural_zero_bound(const FloatView *view, Bucket *b)
{
	if (view->nnegative == 0 && view->npositive > 0)
		b->lower = 0;
	else if (view->npositive == 0 && view->nnegative > 0)
		b->upper = 0;
}

/* Prometheus's HistogramQuantile (promql/quantile.go). */
static double
histogram_quantile(double q, const FloatView *view)
{
	bool		forward;
	double		rank;
	double		count = 0;
	Bucket		bucket = {0, 0, 0};
	double		fraction;
	double		log_lower;
	double		log_upper;

	if (q < 0)
		return -INFINITY;
	if (q > 1)
		return INFINITY;
	if (view->count == 0 || isnan(q))
		return NAN;

	/* with NaN observations (a NaN sum) or a low q, from the lowest bucket */
	forward = isnan(view->sum) || q < 0.5;
	rank = forward ? q * view->count : (1 - q) * view->count;
	for (uint32 n = 0; n < view->nbuckets; n++)
	{
		bucket = view->buckets[forward ? n : view->nbuckets - 1 - n];
		if (bucket.count == 0)
			continue;
		count += bucket.count;
		if (count >= rank)
			break;
	}

	if (!view->custom && bucket.lower < 0 && bucket.upper > 0)
		natural_zero_bound(view, &bucket);
	else if (view->custom && bucket.lower == -INFINITY)
	{
		if (bucket.upper <= 0)
			return bucket.upper;
		bucket.lower = 0;
	}
	else if (view->custom && bucket.upper == INFINITY)
		return bucket.lower;

	if (count > view->count)
		count = view->count;
	/* past the last bucket: NaN observations, or rounding */
	if (count < rank)
		return isnan(view->sum) ? NAN : bucket.upper;

	if (forward)
		rank -= count - bucket.count;
	else
		rank = count - rank;
	fraction = rank / bucket.count;

	if (view->custom || is_zero_bucket(&bucket))
		return bucket.lower + (bucket.upper - bucket.lower) * fraction;
	log_lower = PromGoLog2(fabs(bucket.lower));
	log_upper = PromGoLog2(fabs(bucket.upper));
	if (bucket.lower > 0)
		return PromGoExp2(log_lower + (log_upper - log_lower) * fraction);
	return -PromGoExp2(log_upper + (log_lower - log_upper) * (1 - fraction));
}

/*
 * The observations of bucket b below v, rank being those of the buckets
 * below b: interpolated linearly or exponentially (Bucket.FractionBelow).
 */
static double
rank_below(const Bucket *b, double rank, double v, bool linear)
{
	double		log_lower,
				log_upper,
				log_v;

	if (linear)
	{
		/* no interpolation in a bucket reaching -Inf */
		if (b->lower == -INFINITY)
			return b->count;
		return rank + b->count * ((v - b->lower) / (b->upper - b->lower));
	}
	log_lower = PromGoLog2(fabs(b->lower));
	log_upper = PromGoLog2(fabs(b->upper));
	log_v = PromGoLog2(fabs(v));
	if (v > 0)
		return rank + b->count * ((log_v - log_lower) / (log_upper - log_lower));
	return rank + b->count * (1 - ((log_v - log_upper) / (log_lower - log_upper)));
}

/* Prometheus's HistogramFraction (promql/quantile.go). */
static double
histogram_fraction(double lower, double upper, const FloatView *view)
{
	double		count = 0,
				rank = 0,
				lower_rank = 0,
				upper_rank = 0;
	bool		lower_set = false,
				upper_set = false;
	uint32		n;

	if (view->count == 0 || isnan(lower) || isnan(upper))
		return NAN;
	if (lower >= upper)
		return 0;

	for (n = 0; n < view->nbuckets; n++)
	{
		Bucket		b = view->buckets[n];
		bool		linear = view->custom;

		count += b.count;
		if (view->custom)
		{
			/* 0 is the lower bound of a first bucket reaching above it */
			if (b.lower == -INFINITY && b.upper > 0)
				b.lower = 0;
		}
		else if (is_zero_bucket(&b))
		{
			linear = true;
			natural_zero_bound(view, &b);
		}

		/* a bound at or below the bucket's lower bound */
		if (!lower_set && b.lower >= lower)
		{
			lower_rank = rank;
			lower_set = true;
		}
		if (!upper_set && b.lower >= upper)
		{
			upper_rank = rank;
			upper_set = true;
		}
		if (lower_set && upper_set)
			break;
		/* a bound inside the bucket */
		if (!lower_set && b.lower < lower && b.upper > lower)
		{
			lower_rank = rank_below(&b, rank, lower, linear);
			lower_set = true;
		}
		if (!upper_set && b.lower < upper && b.upper > upper)
		{
			upper_rank = rank_below(&b, rank, upper, linear);
			upper_set = true;
		}
		if (lower_set && upper_set)
			break;
		rank += b.count;
	}

	/* with NaN observations, only those in buckets count */
	if (isnan(view->sum))
	{
		for (n++; n < view->nbuckets; n++)
			count += view->buckets[n].count;
	}
	else
		count = view->count;

	if (!lower_set || lower_rank > count)
		lower_rank = count;
	if (!upper_set || upper_rank > count)
		upper_rank = count;
	return (upper_rank - lower_rank) / view->count;
}

/*
 * Prometheus's histogram variance (histogramVariance in
 * promql/functions.go): each bucket's observations at its arithmetic
 * (custom buckets), zero (zero bucket) or geometric mean, summed with
 * Kahan-Neumaier compensation.
 */
static double
histogram_variance(const FloatView *view)
{
	double		mean = view->sum / view->count;
	double		variance = 0,
				compensation = 0;

	for (uint32 n = 0; n < view->nbuckets; n++)
	{
		const Bucket *b = &view->buckets[n];
		double		value,
					delta,
					inc,
					t;

		if (b->count == 0)
			continue;
		if (view->custom)
			value = (b->upper + b->lower) / 2.0;
		else if (is_zero_bucket(b))
			value = 0;
		else
		{
			value = sqrt(b->upper * b->lower);
			if (b->upper < 0)
				value = -value;
		}
		delta = value - mean;
		inc = b->count * delta * delta;

		/* kahansum.Inc */
		t = variance + inc;
		if (isinf(t))
			compensation = 0;
		else if (fabs(variance) >= fabs(inc))
			compensation += (variance - t) + inc;
		else
			compensation += (inc - t) + variance;
		variance = t;
	}
	variance += compensation;
	return variance / view->count;
}

/* The float view of argument n. */
static void
view_of_arg(FunctionCallInfo fcinfo, int n, FloatView *view)
{
	float_view(PG_GETARG_PROM_HISTOGRAM_P(n), view);
}

/* prom_histogram_count(h): histogram_count, the number of observations. */
Datum
prom_histogram_count(PG_FUNCTION_ARGS)
{
	PromHistogram *h = PG_GETARG_PROM_HISTOGRAM_P(0);

	PG_RETURN_FLOAT8(PromHistogramIsFloat(h) ? h->count.value :
					 (double) h->count.integer);
}

/* prom_histogram_sum(h): histogram_sum, the sum of observations. */
Datum
prom_histogram_sum(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(PG_GETARG_PROM_HISTOGRAM_P(0)->sum);
}

/* prom_histogram_avg(h): histogram_avg, sum / count. */
Datum
prom_histogram_avg(PG_FUNCTION_ARGS)
{
	PromHistogram *h = PG_GETARG_PROM_HISTOGRAM_P(0);

	PG_RETURN_FLOAT8(h->sum / (PromHistogramIsFloat(h) ? h->count.value :
							   (double) h->count.integer));
}

/* prom_histogram_stdvar(h): histogram_stdvar, the estimated variance. */
Datum
prom_histogram_stdvar(PG_FUNCTION_ARGS)
{
	FloatView	view;

	view_of_arg(fcinfo, 0, &view);
	PG_RETURN_FLOAT8(histogram_variance(&view));
}

/* prom_histogram_stddev(h): histogram_stddev, its square root. */
Datum
prom_histogram_stddev(PG_FUNCTION_ARGS)
{
	FloatView	view;

	view_of_arg(fcinfo, 0, &view);
	PG_RETURN_FLOAT8(sqrt(histogram_variance(&view)));
}

/* prom_histogram_quantile(q, h): histogram_quantile. */
Datum
prom_histogram_quantile(PG_FUNCTION_ARGS)
{
	double		q = PG_GETARG_FLOAT8(0);
	FloatView	view;

	view_of_arg(fcinfo, 1, &view);
	PG_RETURN_FLOAT8(histogram_quantile(q, &view));
}

/* prom_histogram_fraction(lower, upper, h): histogram_fraction. */
Datum
prom_histogram_fraction(PG_FUNCTION_ARGS)
{
	double		lower = PG_GETARG_FLOAT8(0);
	double		upper = PG_GETARG_FLOAT8(1);
	FloatView	view;

	view_of_arg(fcinfo, 2, &view);
	PG_RETURN_FLOAT8(histogram_fraction(lower, upper, &view));
}

/*
 * prom_histogram_buckets(h) returns table (lower, upper, count): the buckets
 * with observations, ascending, as Prometheus's HTTP API lists a
 * histogram's buckets (empty buckets left out, counts absolute).
 */
Datum
prom_histogram_buckets(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FloatView	view;

	InitMaterializedSRF(fcinfo, 0);
	view_of_arg(fcinfo, 0, &view);
	for (uint32 n = 0; n < view.nbuckets; n++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		CHECK_FOR_INTERRUPTS();
		if (view.buckets[n].count == 0)
			continue;
		values[0] = Float8GetDatum(view.buckets[n].lower);
		values[1] = Float8GetDatum(view.buckets[n].upper);
		values[2] = Float8GetDatum(view.buckets[n].count);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_VOID();
}
