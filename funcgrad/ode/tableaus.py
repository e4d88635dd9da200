"""Butcher tableaus of the explicit Runge-Kutta methods fg.odeint offers.

Each adaptive method is a 5(4) pair with the first-same-as-last property (the seventh stage is
f at the new solution, so an accepted step's last stage is the next step's first) and a
continuous extension of order 4: the solution inside a step is
y(t0 + theta h) = y0 + h sum_i k_i (P[i] . [theta, theta^2, theta^3, theta^4]).

Coefficients are the published ones: Dormand & Prince (1980) with Shampine's dense output
(1986), and Tsitouras (2011, "Runge-Kutta pairs of order 5(4) satisfying only the first
column simplifying assumption"), whose interpolant is written here in expanded form.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Tableau", "TABLEAUS", "RK4"]


class Tableau(NamedTuple):
    c: np.ndarray          # stage times, (s,)
    a: np.ndarray          # stage weights, (s, s), strictly lower triangular
    b: np.ndarray          # solution weights, (s,)
    e: np.ndarray          # error weights: the local error estimate is h sum_i e_i k_i
    p: np.ndarray          # dense output, (s, 4): b_i(theta) = p[i] . theta^(1..4)
    order: int             # order of the error estimate + 1 (the step size exponent)


def _tri(rows, s):
    a = np.zeros((s, s))
    for i, row in enumerate(rows, start=1):
        a[i, :len(row)] = row
    return a


_DOPRI5_B = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]
DOPRI5 = Tableau(
    c=np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1]),
    a=_tri([[1 / 5],
            [3 / 40, 9 / 40],
            [44 / 45, -56 / 15, 32 / 9],
            [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
            [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
            _DOPRI5_B], 7),
    b=np.array(_DOPRI5_B + [0.0]),
    e=np.array([-71 / 57600, 0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40]),
    p=np.array([
        [1, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432],
        [0, 0, 0, 0],
        [0, 131558114200 / 32700410799, -68118460800 / 10900136933,
         87487479700 / 32700410799],
        [0, -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072],
        [0, 127303824393 / 49829197408, -318862633887 / 49829197408,
         701980252875 / 199316789632],
        [0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844],
        [0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423]]),
    order=5)

_TSIT5_B = [0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742,
            -3.290069515436081, 2.324710524099774]
TSIT5 = Tableau(
    c=np.array([0, 0.161, 0.327, 0.9, 0.9800255409045097, 1, 1]),
    a=_tri([[0.161],
            [-0.008480655492356989, 0.335480655492357],
            [2.8971530571054935, -6.359448489975075, 4.3622954328695815],
            [5.325864828439257, -11.748883564062828, 7.4955393428898365,
             -0.09249506636175525],
            [5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401,
             -0.028269050394068383],
            _TSIT5_B], 7),
    b=np.array(_TSIT5_B + [0.0]),
    e=np.array([-0.00178001105222577714, -0.0008164344596567469, 0.007880878010261995,
                -0.1447110071732629, 0.5823571654525552, -0.45808210592918697,
                1 / 66]),
    p=np.array([
        [1.0, -2.763706197274826, 2.9132554618219126, -1.0530884977290216],
        [0.0, 0.13169999999999998, -0.2234, 0.1017],
        [0.0, 3.9302962368947516, -5.941033872131505, 2.490627285651253],
        [0.0, -12.411077166933676, 30.33818863028232, -16.548102889244902],
        [0.0, 37.50931341651104, -88.1789048947664, 47.37952196281928],
        [0.0, -27.896526289197286, 65.09189467479366, -34.87065786149661],
        [0.0, 1.5, -4.0, 2.5]]),
    order=5)

TABLEAUS = {"dopri5": DOPRI5, "tsit5": TSIT5}

# the classical fourth-order method (fixed steps)
RK4 = Tableau(c=np.array([0, 0.5, 0.5, 1]),
              a=_tri([[0.5], [0, 0.5], [0, 0, 1]], 4),
              b=np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]),
              e=np.zeros(4), p=np.zeros((4, 4)), order=4)
