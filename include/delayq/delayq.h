// Copyright delayq authors.
//
// delayq.h — everything a program needs to embed delayq.
//
// delayq runs jobs later or elsewhere: "cancel this unpaid order in 30
// minutes", "retry this payment call with backoff", "respawn this boss in
// 90 s". One Scheduler API runs over three stores: in memory, SQLite (one
// machine, durable; the embedded default) and Redis (many processes on many
// machines). Start with scheduler.h.

#ifndef DELAYQ_DELAYQ_H_
#define DELAYQ_DELAYQ_H_

#include "delayq/backend.h"             // IWYU pragma: export
#include "delayq/batch.h"               // IWYU pragma: export
#include "delayq/clock.h"               // IWYU pragma: export
#include "delayq/counts.h"              // IWYU pragma: export
#include "delayq/event.h"               // IWYU pragma: export
#include "delayq/event_log.h"           // IWYU pragma: export
#include "delayq/job.h"                 // IWYU pragma: export
#include "delayq/memory_backend.h"      // IWYU pragma: export
#include "delayq/metrics.h"             // IWYU pragma: export
#include "delayq/open.h"                // IWYU pragma: export
#include "delayq/postgres_backend.h"    // IWYU pragma: export
#include "delayq/redacted_url.h"        // IWYU pragma: export
#include "delayq/redis_backend.h"       // IWYU pragma: export
#include "delayq/schedule.h"            // IWYU pragma: export
#include "delayq/scheduler.h"           // IWYU pragma: export
#include "delayq/sqlite_backend.h"      // IWYU pragma: export
#include "delayq/sqlite_transaction.h"  // IWYU pragma: export
#include "delayq/tick_converter.h"      // IWYU pragma: export
#include "delayq/timing_wheel.h"        // IWYU pragma: export
#include "delayq/version.h"             // IWYU pragma: export

#endif  // DELAYQ_DELAYQ_H_
