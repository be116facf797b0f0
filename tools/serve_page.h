/*
 * tools/serve_page — the web page `sprig serve` answers at `/`: a chat that
 * streams its replies, and a live picture of speculation (each round's
 * verified tree with the accepted path highlighted, and the running
 * acceptance), drawn from the "sprig_trace" events of the stream.
 */
#ifndef SPRIG_TOOLS_SERVE_PAGE_H
#define SPRIG_TOOLS_SERVE_PAGE_H

extern const char serve_page_html[];

#endif
