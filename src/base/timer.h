/*
 * base/timer — monotonic clock for statistics and benchmarks.
 */
#ifndef SPRIG_BASE_TIMER_H
#define SPRIG_BASE_TIMER_H

#include <stdint.h>
#include <time.h>

static inline uint64_t sprig_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double sprig_time_ms(void) { return (double)sprig_time_ns() * 1e-6; }

#endif
