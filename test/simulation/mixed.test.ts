/** The budget simulation (property.ts, scenario.ts): the 'mixed' family of schedules. */

import { simulate } from './property.js';

simulate('mixed');
