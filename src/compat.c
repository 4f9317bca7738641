/*-------------------------------------------------------------------------
 *
 * compat.c
 *	  Functions a newer PostgreSQL has and an older one lacks (compat.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "compat.h"

#if PG_VERSION_NUM < 150000

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/tuplestore.h"

/*
 * PostgreSQL 15's InitMaterializedSRF: set up a set-returning function called
 * in materialize mode, its tuplestore and descriptor in the query's memory.
 */
void
InitMaterializedSRF(FunctionCallInfo fcinfo, bits32 flags)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext old;
	TupleDesc	tupdesc;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	if (!(rsinfo->allowedModes & SFRM_Materialize) ||
		((flags & MAT_SRF_USE_EXPECTED_DESC) != 0 && rsinfo->expectedDesc == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("materialize mode required, but it is not allowed in this context")));

	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	if ((flags & MAT_SRF_USE_EXPECTED_DESC) != 0)
		tupdesc = CreateTupleDescCopy(rsinfo->expectedDesc);
	else if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if ((flags & MAT_SRF_BLESS) != 0)
		BlessTupleDesc(tupdesc);
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = tuplestore_begin_heap((rsinfo->allowedModes & SFRM_Materialize_Random) != 0,
											  false, work_mem);
	rsinfo->setDesc = tupdesc;
	MemoryContextSwitchTo(old);
}

/*
 * PostgreSQL 15's repalloc_extended(pointer, size, MCXT_ALLOC_NO_OOM): NULL,
 * the old allocation untouched, when the memory cannot be had.  Never throws.
 */
void *
PromReallocNoOOM(void *pointer, Size old_size, Size size)
{
	void	   *resized = MemoryContextAllocExtended(GetMemoryChunkContext(pointer),
												   size, MCXT_ALLOC_NO_OOM);

	if (resized == NULL)
		return NULL;
	memcpy(resized, pointer, Min(old_size, size));
	pfree(pointer);
	return resized;
}

#endif
