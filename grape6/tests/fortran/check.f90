! check.f90: libgrape6 from Fortran, the way NBODY-style Fortran codes call
! GRAPE-6 (every argument by reference; gfortran appends the underscore, so
! `call g6calc_firsthalf(...)` reaches g6calc_firsthalf_). 64 bodies from a
! seeded generator: force, jerk and potential of every body against a
! direct f64 sum written here (relative error <= 1e-13, jerk <= 1e-12; f64
! precision), the nearest neighbour and pipe 1's neighbour list against a
! brute-force search, and two error codes (g6_open twice: -2; address -1:
! -4). Built and run by scripts/ci-grape6.sh when gfortran is installed.
program grape6_fortran
  implicit none
  integer, parameter :: n = 64
  integer, external :: g6_open, g6_close, g6_npipes, g6_set_ti, g6_set_j_particle
  integer, external :: g6calc_lasthalf2, g6_read_neighbour_list, g6_get_neighbour_list
  double precision :: x(3, n), v(3, n), m(n), acc(3, n), jerk(3, n), pot(n), h2(n)
  double precision :: a2old(3, n), j6old(3, n), z(3), a(3), jk(3), r(3), w(3)
  double precision :: eps2, ti, tj, dtj, d2, d, md3, rv, p, ea, ej, ep, best, dnn
  integer :: idx(n), nnb(n), nbl(n), i, j, ierr, nj, ni, cid, ipipe, maxlen, nlen
  integer :: fails, want, nearest
  integer(8) :: seed

  fails = 0
  cid = 0
  seed = 12345_8
  z = 0d0
  eps2 = 1d-4
  tj = 0d0
  dtj = 1d0 / 64
  do i = 1, n
    do j = 1, 3
      x(j, i) = uniform()
      v(j, i) = 0.3d0 * uniform()
    end do
    m(i) = 1d0 / n
    idx(i) = i - 1
    h2(i) = 0.3d0**2
  end do

  ierr = g6_open(cid)
  call expect(ierr, 0, 'g6_open')
  ierr = g6_open(cid)
  call expect(ierr, -2, 'g6_open twice (G6_ERR_ALREADY_OPEN)')
  ierr = g6_set_j_particle(cid, -1, 0, tj, dtj, m(1), z, z, z, v(1, 1), x(1, 1))
  call expect(ierr, -4, 'address -1 (G6_ERR_ADDRESS)')
  do i = 1, n
    ierr = g6_set_j_particle(cid, i - 1, idx(i), tj, dtj, m(i), z, z, z, v(1, i), x(1, i))
    call expect(ierr, 0, 'g6_set_j_particle')
  end do
  ti = 0d0
  ierr = g6_set_ti(cid, ti)
  call expect(ierr, 0, 'g6_set_ti')
  nj = n
  ni = min(n, g6_npipes())
  a2old = 0d0
  j6old = 0d0
  call g6calc_firsthalf(cid, nj, ni, idx, x, v, a2old, j6old, pot, eps2, h2)
  ierr = g6calc_lasthalf2(cid, nj, ni, idx, x, v, eps2, h2, acc, jerk, pot, nnb)
  call expect(ierr, 0, 'g6calc_lasthalf2')

  ea = 0d0
  ej = 0d0
  ep = 0d0
  do i = 1, ni
    a = 0d0
    jk = 0d0
    p = 0d0
    best = huge(1d0)
    nearest = -1
    do j = 1, n
      if (j == i) cycle
      r = x(:, j) - x(:, i)
      w = v(:, j) - v(:, i)
      d2 = sum(r * r) + eps2
      d = sqrt(d2)
      md3 = m(j) / (d2 * d)
      rv = sum(r * w)
      a = a + md3 * r
      jk = jk + md3 * (w - 3d0 * rv / d2 * r)
      p = p - m(j) / d
      if (d2 - eps2 < best) then
        best = d2 - eps2
        nearest = j - 1
      end if
    end do
    ea = max(ea, sqrt(sum((acc(:, i) - a)**2)) / sqrt(sum(a * a)))
    ej = max(ej, sqrt(sum((jerk(:, i) - jk)**2)) / sqrt(sum(jk * jk)))
    ep = max(ep, abs((pot(i) - p) / p))
    if (nnb(i) /= nearest) then
      dnn = sum((x(:, nnb(i) + 1) - x(:, i))**2)
      if (abs(dnn - best) > 1d-12 * best) call fail('nearest neighbour')
    end if
  end do
  if (ea > 1d-13) call fail('force error')
  if (ej > 1d-12) call fail('jerk error')
  if (ep > 1d-13) call fail('potential error')

  ierr = g6_read_neighbour_list(cid)
  call expect(ierr, 0, 'g6_read_neighbour_list')
  ipipe = 1
  maxlen = n
  ierr = g6_get_neighbour_list(cid, ipipe, maxlen, nlen, nbl)
  call expect(ierr, 0, 'g6_get_neighbour_list')
  want = 0
  do j = 1, n
    if (j == ipipe + 1) cycle
    if (sum((x(:, j) - x(:, ipipe + 1))**2) < h2(ipipe + 1)) then
      want = want + 1
      if (.not. any(nbl(1:nlen) == j - 1)) call fail('a neighbour missing from the list')
    end if
  end do
  if (nlen /= want) call fail('neighbour count')

  ierr = g6_close(cid)
  call expect(ierr, 0, 'g6_close')
  ierr = g6_close(cid)
  call expect(ierr, -1, 'g6_close twice (G6_ERR_NOT_OPEN)')

  write (*, '(a, i0, a, es9.2, a, es9.2, a, es9.2, a, i0, a, i0)') &
    'grape6 fortran: n=', n, ' force_err=', ea, ' jerk_err=', ej, ' pot_err=', ep, &
    ' neighbours=', nlen, ' failures=', fails
  if (fails > 0) then
    write (*, '(a)') 'FAIL'
    stop 1
  end if
  write (*, '(a)') 'PASS'

contains

  ! Park-Miller minimal standard generator, mapped to [-1, 1).
  double precision function uniform()
    seed = mod(16807_8 * seed, 2147483647_8)
    uniform = 2d0 * dble(seed) / 2147483647d0 - 1d0
  end function uniform

  subroutine expect(got, wanted, what)
    integer, intent(in) :: got, wanted
    character(*), intent(in) :: what
    if (got /= wanted) then
      write (*, '(a, a, a, i0, a, i0)') 'FAIL ', what, ': returned ', got, ', want ', wanted
      fails = fails + 1
    end if
  end subroutine expect

  subroutine fail(what)
    character(*), intent(in) :: what
    write (*, '(a, a, a, es10.3, es10.3, es10.3)') 'FAIL ', what, ': ', ea, ej, ep
    fails = fails + 1
  end subroutine fail

end program grape6_fortran
