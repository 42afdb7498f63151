/*
 * signals.h -- the signal dispositions libdred sets at dred_init (signals.c).
 */
#ifndef DRED_SIGNALS_H
#define DRED_SIGNALS_H

/* Signal dispositions libdred sets at dred_init where the application left the default
 * (signals.c): SIGUSR1/SIGPIPE ignored, SIGTERM/SIGINT/SIGHUP remove our files first. */
void dred_signals_init(void);

#endif /* DRED_SIGNALS_H */
