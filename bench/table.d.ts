export declare const START: string;
export declare const END: string;
/** The figures section (markers included) for the results in `dir`. */
export declare function renderFigures(dir?: string): string;
/** Rewrites the section of `readme`; returns true when it changed. */
export declare function writeFigures(readme?: string, dir?: string): boolean;
export declare const TARGETS_START: string;
export declare const TARGETS_END: string;
/** The root README's table of every target (markers included) for the results in `dir`. */
export declare function renderTargets(dir?: string): string;
/** Rewrites the root README's targets table; returns true when it changed. */
export declare function writeTargets(readme?: string, dir?: string): boolean;
