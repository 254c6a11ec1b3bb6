// start.js - runs every section's set-up (report.js and report-*.js push
// them into SECTIONS), then marks the page drawn. Embedded last.
for (const setup of SECTIONS) setup();
// Everything is drawn: tests and the load-time figure wait for this mark.
document.body.dataset.ready = "1";
