function Set-DnsServerForAdapters {
    param([Parameter(Mandatory = $true)][string]$DnsServer)
    $adapters = @(Get-NetAdapter | Where-Object { $_.Status -eq 'Up' })
    if ($adapters.Count -eq 0) { throw 'No network adapter is up' }
    foreach ($adapter in $adapters) {
        Set-DnsClientServerAddress -InterfaceIndex $adapter.ifIndex -ServerAddresses @($DnsServer)
    }
    Clear-DnsClientCache
    Write-MuranoLog "DNS server set to $DnsServer on $($adapters.Count) adapter(s)"
    return $DnsServer
}

function Join-Domain {
    param(
        [Parameter(Mandatory = $true)][string]$DomainName,
        [Parameter(Mandatory = $true)][string]$UserName,
        [Parameter(Mandatory = $true)][string]$Password
    )
    $system = Get-CimInstance -ClassName Win32_ComputerSystem
    if ($system.PartOfDomain -and $system.Domain -eq $DomainName) {
        Write-MuranoLog "Already a member of $DomainName"
        return 'AlreadyMember'
    }
    Wait-Until -What "domain $DomainName to resolve" -TimeoutSeconds 600 -Condition {
        $null -ne (Resolve-DnsName -Name $DomainName -DnsOnly -ErrorAction Stop)
    }
    $credential = New-DomainCredential -DomainName $DomainName -UserName $UserName -Password $Password
    Write-MuranoLog "Joining domain $DomainName"
    Add-Computer -DomainName $DomainName -Credential $credential -Force
    & ipconfig.exe /registerdns | Out-Null
    return 'Joined'
}
