// The types of browser-bundle.js, which scripts/build-dashboard.ts generates (it is not committed).

/** A hash of the script and the style: their URLs carry it, so they can be cached for good. */
export declare const DASHBOARD_VERSION: string;
/** The dashboard's browser code, bundled and minified. */
export declare const DASHBOARD_SCRIPT: string;
/** The dashboard's style sheet. */
export declare const DASHBOARD_STYLE: string;
