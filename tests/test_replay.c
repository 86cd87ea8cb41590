/* test_replay.c — replay's progress line (worker/replay.h; issue 33 item 6):
 * a rate only once time has passed (it read "0 records/s" at 100 % when the
 * replay ended within the millisecond it started), the last line the elapsed
 * time and the overall rate, every line ended by a newline off a terminal.
 * (That each range is printed once is test_kafka_replay's.) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "service/clock.h"

static char *progress(size_t done, size_t total, int64_t ago_ms, bool last) {
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    vw_replay_progress(f, done, total, vw_now_ms() - ago_ms, last);
    long n = ftell(f);
    rewind(f);
    char *s = calloc((size_t)n + 1, 1);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

Test(replay, no_rate_before_time_has_passed) {
    char *s = progress(10, 10, 0, true);
    cr_assert(!strncmp(s, "replay: 10/10 records (100.0%) in 0.0", 37), "%s", s);
    cr_assert_null(strstr(s, "records/s"), "no rate from no time: %s", s);
    cr_assert_eq(s[strlen(s) - 1], '\n');
    free(s);
    s = progress(0, 10, 0, false);
    cr_assert_str_eq(s, "replay: 0/10 records (0.0%), ETA ?\n");
    free(s);
}

Test(replay, rates_and_eta_once_time_has_passed) {
    char *s = progress(10, 10, 2000, true);
    double secs = 0, rate = 0;
    cr_assert_eq(sscanf(s, "replay: 10/10 records (100.0%%) in %lf s, %lf records/s", &secs, &rate),
                 2, "%s", s);
    cr_assert(secs >= 2.0 && secs < 3.0, "%s", s);
    cr_assert(rate > 3.3 && rate <= 5.0, "10 records in about 2 s: %s", s);
    free(s);
    s = progress(500, 1000, 1000, false);
    cr_assert(strstr(s, "replay: 500/1000 records (50.0%), ") && strstr(s, " records/s, ETA "),
              "%s", s);
    cr_assert_eq(s[strlen(s) - 1], '\n', "a file, not a terminal: %s", s);
    free(s);
}
