# Domain controller roles. Each function checks the machine's current role
# first, so running a plan again after a partial failure is harmless.

function Test-IsDomainController {
    # Win32_ComputerSystem.DomainRole: 4 = backup DC, 5 = primary DC.
    return ((Get-CimInstance -ClassName Win32_ComputerSystem).DomainRole -ge 4)
}

function Install-RolePrimaryDomainController {
    param(
        [Parameter(Mandatory = $true)][string]$DomainName,
        [Parameter(Mandatory = $true)][string]$SafeModePassword
    )
    if (Test-IsDomainController) {
        Write-MuranoLog "Already a domain controller; forest $DomainName not created again"
        return 'AlreadyDomainController'
    }
    Install-FeatureIfMissing -Name @('AD-Domain-Services', 'DNS', 'RSAT-AD-PowerShell') | Out-Null
    Import-Module ADDSDeployment
    Write-MuranoLog "Creating forest $DomainName"
    Install-ADDSForest -DomainName $DomainName `
        -SafeModeAdministratorPassword (ConvertTo-PlainSecureString -Text $SafeModePassword) `
        -InstallDns -NoRebootOnCompletion -Force | Out-Null
    Write-MuranoLog "Forest $DomainName created; the agent reboots the server"
    return 'Promoted'
}

function Get-DnsListeningIpAddress {
    param(
        [Parameter(Mandatory = $true)][string]$DomainName,
        [string[]]$PreferredAddresses = @()
    )
    Wait-Until -What "domain $DomainName to answer" -TimeoutSeconds 1200 -Condition {
        (Get-Service -Name NTDS).Status -eq 'Running' -and
        (Get-Service -Name DNS).Status -eq 'Running' -and
        $null -ne (Get-ADDomain -Identity $DomainName) -and
        $null -ne (Resolve-DnsName -Name $DomainName -Server 127.0.0.1 -DnsOnly -ErrorAction Stop)
    }
    $listening = @((Get-DnsServerSetting -All).ListeningIPAddress |
        Where-Object { $_ -match '^\d{1,3}(\.\d{1,3}){3}$' -and $_ -ne '127.0.0.1' })
    if ($listening.Count -eq 0) {
        $listening = @(Get-NetIPAddress -AddressFamily IPv4 |
            Where-Object { $_.IPAddress -ne '127.0.0.1' -and $_.PrefixOrigin -ne 'WellKnown' } |
            ForEach-Object { $_.IPAddress })
    }
    $preferred = @($listening | Where-Object { $PreferredAddresses -contains $_ })
    $others = @($listening | Where-Object { $PreferredAddresses -notcontains $_ })
    return @($preferred + $others)
}

function Install-RoleSecondaryDomainController {
    param(
        [Parameter(Mandatory = $true)][string]$DomainName,
        [Parameter(Mandatory = $true)][string]$UserName,
        [Parameter(Mandatory = $true)][string]$Password,
        [Parameter(Mandatory = $true)][string]$SafeModePassword
    )
    if (Test-IsDomainController) {
        Write-MuranoLog "Already a domain controller of $DomainName"
        return 'AlreadyDomainController'
    }
    Install-FeatureIfMissing -Name @('AD-Domain-Services', 'DNS', 'RSAT-AD-PowerShell') | Out-Null
    Import-Module ADDSDeployment
    $credential = New-DomainCredential -DomainName $DomainName -UserName $UserName -Password $Password
    Write-MuranoLog "Promoting this server to a controller of $DomainName"
    Install-ADDSDomainController -DomainName $DomainName -Credential $credential `
        -SafeModeAdministratorPassword (ConvertTo-PlainSecureString -Text $SafeModePassword) `
        -InstallDns -NoRebootOnCompletion -Force | Out-Null
    return 'Promoted'
}
