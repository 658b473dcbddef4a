export declare const START: string;
export declare const END: string;
/** The figures section (markers included) for the results in `dir`. */
export declare function renderFigures(dir?: string): string;
/** Rewrites the section of `readme`; returns true when it changed. */
export declare function writeFigures(readme?: string, dir?: string): boolean;
