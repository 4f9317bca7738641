/*-------------------------------------------------------------------------
 *
 * histogram_functions.h
 *	  What the PromQL histogram functions share: Go's Log2 and Exp2.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PROMREAD_HISTOGRAM_FUNCTIONS_H
#define PROMREAD_HISTOGRAM_FUNCTIONS_H

/* in go_math.c */
extern double PromGoLog2(double x);
extern double PromGoExp2(double x);

#endif							/* PROMREAD_HISTOGRAM_FUNCTIONS_H */
